//! How a streamed answer ends when the run's task dies without a result
//! (a model that panics): with an error event, never silently.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use crate::common;

use std::sync::Arc;

use loopwright_core::{Agent, LanguageModel, ModelError, model::ModelRequest, model::ModelStream};
use loopwright_serve::{Serve, ServedAgent, Surface};
use serde_json::{Value, json};

/// A model whose every call panics, taking the run's task down with it.
struct PanickingModel;

#[async_trait::async_trait]
impl LanguageModel for PanickingModel {
    fn provider(&self) -> &str {
        "test"
    }
    fn model_id(&self) -> &str {
        "panicking"
    }
    async fn stream(&self, _request: ModelRequest) -> Result<ModelStream, ModelError> {
        panic!("the model broke");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_rest_stream_whose_run_dies_ends_with_an_error_event() {
    let agent = Agent::builder(Arc::new(PanickingModel)).name("broken").build();
    let running = Serve::new()
        .agent(ServedAgent::new(agent))
        .rest("127.0.0.1:0".parse().unwrap())
        .start()
        .await
        .unwrap();
    let url = format!(
        "http://{}/v1/agents/broken",
        running.address(Surface::Rest).unwrap()
    );
    let body = tokio::time::timeout(std::time::Duration::from_secs(30), async {
        let response = common::http()
            .post(url)
            .json(&json!({"prompt": "go", "stream": true}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        response.text().await.unwrap()
    })
    .await
    .expect("the stream never ended");
    let events: Vec<Value> = body
        .lines()
        .filter_map(|l| l.strip_prefix("data: "))
        .map(|d| serde_json::from_str(d).unwrap())
        .collect();
    let kinds: Vec<&str> = events.iter().map(|e| e["type"].as_str().unwrap()).collect();
    assert_eq!(kinds.first(), Some(&"run_started"), "{kinds:?}");
    assert!(!kinds.contains(&"finished"), "{kinds:?}");
    let last = events.last().unwrap();
    assert_eq!(last["type"], "error", "{body}");
    assert_eq!(last["error"]["type"], "server_error", "{last}");
    let message = last["error"]["message"].as_str().unwrap();
    assert!(message.contains("without a result"), "{message}");
    running.shutdown().await;
}
