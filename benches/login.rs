//! A login's password check for a registered email (a wrong password) against one for an unknown email: the
//! two should cost the same, so that the time of a 401 does not tell which emails exist (docs/security.md).

use criterion::{criterion_group, criterion_main, Criterion};
use levy::security::{check_login_password, hash_password};

fn logins(c: &mut Criterion) {
    let stored = hash_password("correct horse battery").unwrap();
    let mut g = c.benchmark_group("login");
    g.sample_size(30);
    g.bench_function("registered email, wrong password", |b| b.iter(|| check_login_password("wrong password", Some(&stored))));
    g.bench_function("unknown email", |b| b.iter(|| check_login_password("wrong password", None)));
    g.finish();
}

criterion_group!(benches, logins);
criterion_main!(benches);
