//! Restate's admin and ingress APIs, as a replica calls them: register the
//! endpoint, start a run's workflow, resolve a decision, cancel a run.
//!
//! Invariant: each call is idempotent where Restate allows it (registering
//! the same address again answers the same deployment; a run is started once
//! per run id, its workflow key; a decision is sent with an idempotency key),
//! so a request retried by a client or sent by two replicas does one thing.

use std::time::Duration;

use serde_json::{Value, json};

use super::{Restate, SERVICE_NAME};

/// How long one call to Restate may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// Tries of a registration while the admin API is not up yet.
const REGISTER_ATTEMPTS: u32 = 20;

/// The pause between them.
const REGISTER_PAUSE: Duration = Duration::from_millis(500);

/// A call to Restate that failed: what was asked, and why.
///
/// ```no_run
/// # async fn demo(runs: loopwright_runs::Runs, config: loopwright_runs::durable::Restate) {
/// if let Err(e) = runs.with_restate(config) {
///     eprintln!("{e}"); // Restate client: ...
/// }
/// # }
/// ```
#[derive(Debug, Clone, thiserror::Error)]
#[error("Restate {what}: {message}")]
pub struct RestateError {
    what: String,
    message: String,
}

impl RestateError {
    /// Durable runs were served without Restate configured.
    pub(crate) fn not_configured() -> Self {
        failed(
            "endpoint",
            "these runs are not durable: configure Restate first (Runs::with_restate)",
        )
    }
}

fn failed(what: impl Into<String>, message: impl ToString) -> RestateError {
    RestateError {
        what: what.into(),
        message: message.to_string(),
    }
}

/// The admin and ingress APIs of one Restate.
#[derive(Debug, Clone)]
pub(crate) struct Client {
    http: reqwest::Client,
    pub(crate) config: Restate,
}

impl Client {
    pub(crate) fn new(config: Restate) -> Result<Self, RestateError> {
        if rustls::crypto::CryptoProvider::get_default().is_none() {
            // Another thread may win the race: either way one is installed.
            let _ = rustls::crypto::ring::default_provider().install_default();
        }
        let http = reqwest::Client::builder()
            .timeout(CALL_TIMEOUT)
            .build()
            .map_err(|e| failed("client", e))?;
        Ok(Self { http, config })
    }

    /// Register this deployment (the advertised address) with the admin
    /// API: its id. Registering an address again answers its deployment.
    pub(crate) async fn register(&self) -> Result<String, RestateError> {
        let url = format!("{}/deployments", self.config.admin());
        let what = format!("registration of {} at {url}", self.config.advertised());
        let body = json!({"uri": self.config.advertised()});
        let mut attempt = 1;
        loop {
            let answer = self.http.post(&url).json(&body).send().await;
            let retry = match answer {
                Ok(response) if response.status().is_success() => {
                    let value: Value = response.json().await.map_err(|e| failed(&what, e))?;
                    return Ok(value
                        .get("id")
                        .and_then(Value::as_str)
                        .unwrap_or("unknown")
                        .to_owned());
                }
                Ok(response) => {
                    let status = response.status();
                    let text = response.text().await.unwrap_or_default();
                    // 5xx: the admin API is starting; 4xx says what is wrong.
                    if !status.is_server_error() {
                        return Err(failed(&what, format!("{status}: {text}")));
                    }
                    format!("{status}: {text}")
                }
                Err(e) => e.to_string(),
            };
            if attempt >= REGISTER_ATTEMPTS {
                return Err(failed(&what, retry));
            }
            attempt += 1;
            tokio::time::sleep(REGISTER_PAUSE).await;
        }
    }

    /// Start run `run_id`'s workflow on `input`: its invocation id.
    pub(crate) async fn start(
        &self,
        run_id: &str,
        input: &impl serde::Serialize,
    ) -> Result<String, RestateError> {
        let url = format!("{}/{SERVICE_NAME}/{run_id}/run/send", self.config.ingress());
        let what = format!("start of run {run_id}");
        let value = answer(&what, self.http.post(&url).json(input)).await?;
        value
            .get("invocationId")
            .and_then(Value::as_str)
            .map(str::to_owned)
            .ok_or_else(|| failed(&what, format!("no invocation id in {value}")))
    }

    /// Resolve decision `key` of run `run_id` with `decision`.
    pub(crate) async fn decide(&self, run_id: &str, key: &str, decision: &Value) -> Result<(), RestateError> {
        let url = format!("{}/{SERVICE_NAME}/{run_id}/decide", self.config.ingress());
        let what = format!("decision {key} of run {run_id}");
        let response = self
            .http
            .post(&url)
            .header("idempotency-key", format!("{run_id}/{key}"))
            .json(&json!({"key": key, "decision": decision}))
            .send()
            .await
            .map_err(|e| failed(&what, e))?;
        let status = response.status();
        if status.is_success() {
            return Ok(());
        }
        let text = response.text().await.unwrap_or_default();
        Err(failed(&what, format!("{status}: {text}")))
    }

    /// The invocation id of run `run_id`'s workflow, asked of the admin
    /// API's SQL introspection (for a run whose record lost it).
    pub(crate) async fn invocation_of(&self, run_id: &str) -> Result<Option<String>, RestateError> {
        self.invocation_field(run_id, "id").await
    }

    /// The state of run `run_id`'s workflow invocation in Restate
    /// (`running`, `backing-off`, `suspended`, `completed`, ...), `None`
    /// when Restate has none.
    pub(crate) async fn invocation_status(&self, run_id: &str) -> Result<Option<String>, RestateError> {
        self.invocation_field(run_id, "status").await
    }

    /// Column `field` of `sys_invocation` for run `run_id`'s workflow.
    async fn invocation_field(&self, run_id: &str, field: &str) -> Result<Option<String>, RestateError> {
        let url = format!("{}/query", self.config.admin());
        let what = format!("the invocation of run {run_id}");
        // A run id is ours (`run_` and hex, or a response id): still quoted.
        let key = run_id.replace('\'', "''");
        let query = format!(
            "SELECT {field} FROM sys_invocation WHERE target_service_name = '{SERVICE_NAME}' \
             AND target_service_key = '{key}' AND target_handler_name = 'run'"
        );
        let request = self
            .http
            .post(&url)
            .header("accept", "application/json")
            .json(&json!({"query": query}));
        let value = answer(&what, request).await?;
        Ok(value["rows"]
            .as_array()
            .and_then(|rows| rows.first())
            .and_then(|row| row[field].as_str())
            .map(str::to_owned))
    }

    /// Cancel invocation `invocation` (a run waiting for a decision wakes
    /// up cancelled); one that ended already is left as it is.
    pub(crate) async fn cancel(&self, invocation: &str) -> Result<(), RestateError> {
        let url = format!("{}/invocations/{invocation}/cancel", self.config.admin());
        let what = format!("cancellation of {invocation}");
        let response = self.http.patch(&url).send().await.map_err(|e| failed(&what, e))?;
        let status = response.status();
        if status.is_success()
            || status == reqwest::StatusCode::NOT_FOUND
            || status == reqwest::StatusCode::CONFLICT
        {
            return Ok(());
        }
        let text = response.text().await.unwrap_or_default();
        Err(failed(&what, format!("{status}: {text}")))
    }
}

/// Send `request` (asking `what`): its JSON answer, or what went wrong.
async fn answer(what: &str, request: reqwest::RequestBuilder) -> Result<Value, RestateError> {
    let response = request.send().await.map_err(|e| failed(what, e))?;
    let status = response.status();
    let value: Value = response.json().await.unwrap_or_default();
    if !status.is_success() {
        return Err(failed(what, format!("{status}: {value}")));
    }
    Ok(value)
}
