//! Small utilities from client-go's `util` packages and `k8s.io/utils`: an injectable
//! [`Clock`](clock::Clock).

pub mod clock;
