//! Reading what a run recorded through the `metrics` facade (a test
//! recorder set as the thread's default).

use metrics_util::debugging::{DebugValue, DebuggingRecorder};

/// A metric's name, labels and value.
pub type Sample = (String, Vec<(String, String)>, DebugValue);

/// The value of the first `name` sample carrying `label`.
pub fn metric<'a>(snapshot: &'a [Sample], name: &str, label: (&str, &str)) -> Option<&'a DebugValue> {
    labelled(snapshot, name, &[label])
}

/// The value of the first `name` sample carrying every one of `labels`.
pub fn labelled<'a>(snapshot: &'a [Sample], name: &str, labels: &[(&str, &str)]) -> Option<&'a DebugValue> {
    snapshot
        .iter()
        .find(|(n, have, _)| {
            n == name
                && labels
                    .iter()
                    .all(|(k, v)| have.iter().any(|(hk, hv)| hk == k && hv == v))
        })
        .map(|(_, _, v)| v)
}

pub fn snapshot(recorder: &DebuggingRecorder) -> Vec<Sample> {
    recorder
        .snapshotter()
        .snapshot()
        .into_vec()
        .into_iter()
        .map(|(key, _, _, value)| {
            let key = key.key();
            let labels = key
                .labels()
                .map(|l| (l.key().to_owned(), l.value().to_owned()))
                .collect();
            (key.name().to_owned(), labels, value)
        })
        .collect()
}
