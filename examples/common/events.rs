//! How the serving examples show a background run's events: the whole
//! event log (`GET /v1/runs/{id}/events`, from sequence 0; the stream ends
//! after `finished`), one line each on stderr, with the attempt of a
//! durable run's `resumed` marker.

use serde_json::Value;

/// Print the events of the run at `run_url`, after the `curl` line that
/// reads them.
pub async fn print_events(http: &reqwest::Client, run_url: &str) -> Result<(), String> {
    eprintln!("$ curl -N {run_url}/events");
    let text = http
        .get(format!("{run_url}/events"))
        .send()
        .await
        .and_then(reqwest::Response::error_for_status)
        .map_err(|e| format!("{run_url}/events: {e}"))?
        .text()
        .await
        .map_err(|e| format!("{run_url}/events: {e}"))?;
    for block in text.split("\n\n") {
        let id = block.lines().find_map(|l| l.strip_prefix("id: "));
        let data = block.lines().find_map(|l| l.strip_prefix("data: "));
        if let (Some(id), Some(data)) = (id, data) {
            let event: Value = serde_json::from_str(data).unwrap_or(Value::Null);
            match event["type"].as_str() {
                Some("resumed") => eprintln!("  event {id}: resumed (attempt {})", event["attempt"]),
                kind => eprintln!("  event {id}: {}", kind.unwrap_or("?")),
            }
        }
    }
    Ok(())
}
