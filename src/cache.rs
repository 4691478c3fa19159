//! What this instance has last looked up or read, by key, for work that is checked again against the database
//! where it matters (so a stale entry costs a redo or a refusal, never a wrong answer). At most `SEEN_SIZE`
//! entries; the map starts afresh past it.

use std::collections::HashMap;
use std::sync::Mutex;

const SEEN_SIZE: usize = 10_000;

pub struct Seen<V>(Mutex<HashMap<String, V>>);

impl<V> Default for Seen<V> {
    fn default() -> Self {
        Seen(Mutex::new(HashMap::new()))
    }
}

impl<V: Clone> Seen<V> {
    pub fn get(&self, key: &str) -> Option<V> {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).get(key).cloned()
    }

    pub fn put(&self, key: &str, value: V) {
        let mut m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if m.len() >= SEEN_SIZE && !m.contains_key(key) {
            m.clear();
        }
        m.insert(key.to_string(), value);
    }

    /// Keeps only the entries `keep` accepts.
    pub fn retain(&self, mut keep: impl FnMut(&V) -> bool) {
        self.0.lock().unwrap_or_else(|e| e.into_inner()).retain(|_, v| keep(v));
    }
}
