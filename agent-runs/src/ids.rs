//! Ids: a run's (`run_` and 128 random bits), and the ones a server gives
//! its sessions, responses and replicas alike.
//!
//! Invariant: an id from [`new_id`] is unguessable when the system has
//! randomness, and still unique in this process when it has none.

/// A fresh id: `prefix` and 128 random bits in hex.
///
/// ```
/// let id = loopwright_runs::shared::new_id("sess_");
/// assert_eq!(id.len(), "sess_".len() + 32);
/// ```
pub fn new_id(prefix: &str) -> String {
    use ring::rand::SecureRandom;
    let mut bytes = [0u8; 16];
    if ring::rand::SystemRandom::new().fill(&mut bytes).is_err() {
        // No system randomness: time and a counter are still unique here.
        return response_id(prefix);
    }
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    format!("{prefix}{hex}")
}

/// A fresh response id with `prefix` (`chatcmpl-`, `msg_`): the time and
/// a counter of this process.
///
/// ```
/// use loopwright_runs::shared::response_id;
/// assert_ne!(response_id("msg_"), response_id("msg_"));
/// ```
pub fn response_id(prefix: &str) -> String {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("{prefix}{now:x}{n:06x}")
}
