//! Group commit: writes that arrive while a batch is being applied wait and go into the next batch, so
//! a busy instance applies many requests' writes in one database transaction with a fixed number of
//! statements, instead of one transaction (and its lock, round trips and commit) per request.
//!
//! There is no background task to start or stop. Each caller queues its job and then either receives
//! its result or, when fewer than the allowed number of batches are running, leads: it starts a runner
//! task that takes what is queued (oldest first), applies it, and goes on with what queued meanwhile
//! until the queue is empty; the leader then waits for its answer like the others (or leads again, should
//! its job still be queued when that runner ends). The number of concurrent runners is the caller's
//! choice (one fits SQLite's single writer, and writes that meet on the same rows). A busy instance thus
//! goes from batch to batch without handing the lead to another task in between, and a caller that goes
//! away (a dropped connection) never aborts the others' writes. An idle instance applies a lone job at
//! once, as a batch of one; under load, batches grow with the number of requests waiting.
//!
//! A batch answers its callers through [`Replies`] as soon as their results are settled, and may then go on
//! with work of its own (giving back a connection, say) before the runner takes the next batch: the callers
//! do not wait for that.

use std::future::Future;
use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

type Queue<J, R> = Arc<Mutex<Vec<(J, oneshot::Sender<R>)>>>;

/// The callers of one batch, answered together.
pub struct Replies<R>(Vec<oneshot::Sender<R>>);

impl<R> Replies<R> {
    /// Answers the batch's jobs, one result per job in the order the batch was given them. Callers without a
    /// result (fewer results than jobs), like those of a batch that drops its replies unsent, get `None`.
    pub fn send(self, results: Vec<R>) {
        for (sender, result) in self.0.into_iter().zip(results) {
            let _ = sender.send(result);
        }
    }
}

pub struct Group<J, R> {
    queue: Queue<J, R>,
    lead: Arc<tokio::sync::Semaphore>,
    max_batch: usize,
}

impl<J: Send + 'static, R: Send + 'static> Group<J, R> {
    /// A group whose batches hold at most `max_batch` jobs, with at most `concurrent` batches applied at once.
    pub fn new(max_batch: usize, concurrent: usize) -> Self {
        Group {
            queue: Arc::new(Mutex::new(Vec::new())),
            lead: Arc::new(tokio::sync::Semaphore::new(concurrent.max(1))),
            max_batch: max_batch.max(1),
        }
    }

    /// Applies `job` in a batch with whatever else is waiting. `apply` takes a batch and its [`Replies`], and
    /// sends one result per job, in order. `None` when the batch that held the job ended without answering it
    /// (a panic).
    pub async fn submit<F, Fut>(&self, job: J, apply: F) -> Option<R>
    where
        F: Fn(Vec<J>, Replies<R>) -> Fut + Send + Sync + 'static,
        Fut: Future<Output = ()> + Send + 'static,
    {
        let apply = Arc::new(apply);
        let (tx, mut rx) = oneshot::channel();
        self.queue.lock().unwrap_or_else(|e| e.into_inner()).push((job, tx));
        loop {
            let guard = tokio::select! {
                biased;
                result = &mut rx => return result.ok(),
                permit = self.lead.clone().acquire_owned() => match permit {
                    Ok(permit) => permit,
                    Err(_) => return None,
                },
            };
            // The batch before may have carried this job; its result is then already here.
            match rx.try_recv() {
                Ok(result) => return Some(result),
                Err(oneshot::error::TryRecvError::Closed) => return None,
                Err(oneshot::error::TryRecvError::Empty) => {}
            }
            let batch = take(&self.queue, self.max_batch);
            if batch.is_empty() {
                // Another runner took this job; it will answer.
                drop(guard);
                return rx.await.ok();
            }
            let (queue, max_batch, apply) = (self.queue.clone(), self.max_batch, apply.clone());
            tokio::spawn(async move {
                let mut batch = batch;
                while !batch.is_empty() {
                    let (jobs, senders): (Vec<J>, Vec<oneshot::Sender<R>>) = batch.into_iter().unzip();
                    (*apply)(jobs, Replies(senders)).await;
                    batch = take(&queue, max_batch);
                }
                // (A job queued after the last look finds the lead free.)
                drop(guard);
            });
            // Back to waiting: for the answer, or for the lead should this job still be queued when the runner
            // ends (it took more than `max_batch` jobs queued ahead and then panicked). A runner that panics drops
            // the senders of the batch it held: those callers get `None`.
        }
    }
}

fn take<J, R>(queue: &Queue<J, R>, max_batch: usize) -> Vec<(J, oneshot::Sender<R>)> {
    let mut q = queue.lock().unwrap_or_else(|e| e.into_inner());
    let n = q.len().min(max_batch);
    q.drain(..n).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_job_gets_its_own_result_and_batches_form_under_load() {
        let group = Arc::new(Group::<u32, u32>::new(8, 2));
        let batches = Arc::new(AtomicUsize::new(0));
        let mut handles = Vec::new();
        for i in 0..200u32 {
            let (group, batches) = (group.clone(), batches.clone());
            handles.push(tokio::spawn(async move {
                group
                    .submit(i, move |jobs: Vec<u32>, replies| {
                        let batches = batches.clone();
                        async move {
                            assert!(jobs.len() <= 8);
                            batches.fetch_add(1, Ordering::SeqCst);
                            tokio::time::sleep(std::time::Duration::from_millis(2)).await;
                            replies.send(jobs.iter().map(|j| j * 10).collect());
                        }
                    })
                    .await
            }));
        }
        for (i, h) in handles.into_iter().enumerate() {
            assert_eq!(h.await.unwrap(), Some(i as u32 * 10));
        }
        let n = batches.load(Ordering::SeqCst);
        // 200 jobs arriving together cannot go one by one: at least 200/8 batches, and far fewer than 200.
        assert!((25..200).contains(&n), "{n} batches");
    }

    #[tokio::test]
    async fn a_leader_whose_job_a_failed_batch_left_queued_leads_again() {
        // One job per batch; the job queued ahead (its caller gone) makes the batch fail. The leader's own job
        // is still queued when that runner ends: the leader takes the lead again and gets its answer.
        let group: Group<u32, u32> = Group::new(1, 1);
        let (tx, _gone) = oneshot::channel();
        group.queue.lock().unwrap().push((0, tx));
        let apply = |jobs: Vec<u32>, replies: Replies<u32>| async move {
            assert_ne!(jobs[0], 0, "the batch of job 0 fails");
            replies.send(jobs);
        };
        let answer = tokio::time::timeout(std::time::Duration::from_secs(10), group.submit(7, apply)).await;
        assert_eq!(answer.expect("the leader is answered"), Some(7));
        assert!(group.queue.lock().unwrap().is_empty());
    }

    #[tokio::test]
    async fn a_failed_batch_answers_none() {
        let group = Group::<u32, u32>::new(4, 1);
        let r = group.submit(1, |_jobs, _replies: Replies<u32>| async { panic!("writer failed") }).await;
        assert_eq!(r, None);
        // The group still works afterwards.
        assert_eq!(group.submit(2, |jobs, replies| async move { replies.send(jobs) }).await, Some(2));
        // A batch that drops its replies unsent answers `None` too.
        assert_eq!(group.submit(3, |_jobs, replies: Replies<u32>| async move { drop(replies) }).await, None);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn callers_are_answered_before_the_batch_ends_and_the_next_waits_for_it() {
        // The first batch answers, then holds on until its caller has its answer: were answers sent only when the
        // batch ended, neither would happen. A job submitted meanwhile is applied only after that batch ends.
        let group = Arc::new(Group::<u32, u32>::new(8, 1));
        let (answered_tx, answered_rx) = oneshot::channel::<()>();
        let answered_rx = Arc::new(Mutex::new(Some(answered_rx)));
        let ended = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let apply = {
            let ended = ended.clone();
            move |jobs: Vec<u32>, replies: Replies<u32>| {
                let (answered_rx, ended) = (answered_rx.lock().unwrap().take(), ended.clone());
                async move {
                    if jobs == [1] {
                        replies.send(vec![10]);
                        let waited = tokio::time::timeout(std::time::Duration::from_secs(10), answered_rx.expect("first batch")).await;
                        assert!(matches!(waited, Ok(Ok(()))), "the caller was answered while its batch still ran");
                        ended.store(true, Ordering::SeqCst);
                    } else {
                        assert!(ended.load(Ordering::SeqCst), "the next batch waits for the one before to end");
                        replies.send(jobs.iter().map(|j| j * 10).collect());
                    }
                }
            }
        };
        let first = group.submit(1, apply.clone()).await;
        assert_eq!(first, Some(10));
        let second = {
            let group = group.clone();
            let apply = apply.clone();
            tokio::spawn(async move { group.submit(2, apply).await })
        };
        answered_tx.send(()).unwrap();
        assert_eq!(second.await.unwrap(), Some(20));
        assert!(ended.load(Ordering::SeqCst));
    }
}
