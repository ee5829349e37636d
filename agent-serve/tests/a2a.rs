//! The A2A surface (`Serve::a2a`) driven by A2A's official Python SDK
//! (tests/clients/a2a_client.py): the card, a message as a task that
//! completes with the answer as its artifact, the task read back, a second
//! message in the same context (a session); then, over plain HTTP, what a
//! hostile or confused client gets: the protocol's error codes, nothing
//! started.

use loopwright_core::Agent;
use loopwright_serve::{Running, Serve, ServedAgent, Surface};
use loopwright_test_support::model_server::{ModelServer, sse};
use serde_json::{Value, json};
use std::path::PathBuf;

use crate::common::{self, HANG_GUARD};

async fn serve(model: &ModelServer) -> Running {
    let agent = Agent::builder(common::openai_on(model, "gpt-4.1-nano"))
        .name("assistant")
        .build();
    Serve::new()
        .agent(ServedAgent::new(agent).with_description("Answers questions about the weather."))
        .a2a("127.0.0.1:0".parse().unwrap())
        .start()
        .await
        .unwrap()
}

async fn python(script: &str, args: &[&str]) -> Value {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    let program = root.join("../tests-deps/python/clients/.venv/bin/python");
    common::client_json(
        &program,
        &root.join("tests/clients").join(script),
        args,
        HANG_GUARD,
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_a2a_python_sdk_sends_a_message_reads_the_task_and_goes_on_in_its_context() {
    let model = ModelServer::start(vec![
        sse::answer("It is sunny in Lisbon.").into(),
        sse::answer("Rain tomorrow.").into(),
    ])
    .await;
    let running = serve(&model).await;
    let url = format!("http://{}/assistant", running.address(Surface::A2a).unwrap());
    let seen = python("a2a_client.py", &["basic", &url]).await;

    let card = &seen["card"];
    assert_eq!(card["name"], "assistant");
    assert_eq!(card["description"], "Answers questions about the weather.");
    assert_eq!(card["supportedInterfaces"][0]["url"], json!(url));
    assert_eq!(card["supportedInterfaces"][0]["protocolBinding"], "JSONRPC");
    assert_eq!(card["supportedInterfaces"][0]["protocolVersion"], "1.0");

    let sent = &seen["sent"];
    assert_eq!(sent["status"]["state"], "TASK_STATE_COMPLETED", "{seen}");
    assert_eq!(sent["artifacts"][0]["parts"][0]["text"], "It is sunny in Lisbon.");
    assert!(
        sent["id"].as_str().unwrap().starts_with("run_"),
        "a task is a run: {sent}"
    );
    let task = &seen["task"];
    assert_eq!(
        (&task["id"], &task["status"]["state"]),
        (&sent["id"], &sent["status"]["state"])
    );
    // The second message went on in the context: the session held the first turn.
    let again = &seen["again"];
    assert_eq!(again["contextId"], sent["contextId"]);
    assert_ne!(again["id"], sent["id"]);
    assert_eq!(again["artifacts"][0]["parts"][0]["text"], "Rain tomorrow.");
    let second = &model.bodies()[1]["messages"];
    let said: Vec<&str> = second
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["content"].as_str())
        .collect();
    assert!(
        said.contains(&"What is the weather in Lisbon?") && said.contains(&"It is sunny in Lisbon."),
        "{second}"
    );
    running.shutdown().await;
}

/// What `request` answers, as JSON.
async fn json_of(request: reqwest::RequestBuilder) -> Value {
    request.send().await.unwrap().json().await.unwrap()
}

async fn rpc(url: &str, version: Option<&str>, body: &str) -> Value {
    let mut request = common::http()
        .post(url)
        .header("content-type", "application/json")
        .body(body.to_owned());
    if let Some(version) = version {
        request = request.header("a2a-version", version);
    }
    let response = request.send().await.unwrap();
    assert_eq!(response.status(), 200, "JSON-RPC answers 200 with its error");
    response.json().await.unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_the_protocols_error_codes_and_start_nothing() {
    let model = ModelServer::start(vec![sse::answer("unused").into()]).await;
    let running = serve(&model).await;
    let url = format!("http://{}/assistant", running.address(Surface::A2a).unwrap());
    let send = |text: &str| {
        json!({"jsonrpc": "2.0", "id": 7, "method": "SendMessage", "params": {"message": {
            "messageId": "m", "role": "ROLE_USER", "parts": [{"text": text}]}}})
        .to_string()
    };
    let code = |v: &Value| v["error"]["code"].as_i64();
    assert_eq!(code(&rpc(&url, Some("1.0"), "{not json").await), Some(-32700));
    assert_eq!(code(&rpc(&url, Some("1.0"), r#"{"id": 1}"#).await), Some(-32600));
    let unknown = rpc(
        &url,
        Some("1.0"),
        r#"{"jsonrpc": "2.0", "id": 2, "method": "Nope"}"#,
    )
    .await;
    assert_eq!((code(&unknown), &unknown["id"]), (Some(-32601), &json!(2)));
    // No version header means 0.3, which is not this surface's.
    let old = rpc(&url, None, &send("hi")).await;
    assert_eq!(code(&old), Some(-32009), "{old}");
    assert!(
        old["error"]["message"]
            .as_str()
            .unwrap()
            .contains("A2A-Version: 1.0"),
        "{old}"
    );
    let bad = r#"{"jsonrpc": "2.0", "id": 3, "method": "SendMessage", "params": {"message": {"parts": 5}}}"#;
    assert_eq!(code(&rpc(&url, Some("1.0"), bad).await), Some(-32602));
    let missing = r#"{"jsonrpc": "2.0", "id": 4, "method": "GetTask", "params": {"id": "run_nope"}}"#;
    assert_eq!(code(&rpc(&url, Some("1.0"), missing).await), Some(-32001));
    let file = json!({"jsonrpc": "2.0", "id": 5, "method": "SendMessage", "params": {"message": {
        "messageId": "m", "role": "ROLE_USER", "parts": [{"url": "https://example.com/a.pdf"}]}}});
    assert_eq!(
        code(&rpc(&url, Some("1.0"), &file.to_string()).await),
        Some(-32005)
    );
    assert!(model.received().is_empty(), "nothing ran");
    running.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_keys_the_card_is_public_and_says_how_to_authenticate() {
    let model = ModelServer::start(vec![sse::answer("Hello.").into()]).await;
    let clock = loopwright_core::tool_fn("clock", "The time now.", |_: Value| async move { Ok("noon") });
    let agent = Agent::builder(common::openai_on(&model, "gpt-4.1-nano"))
        .name("assistant")
        .tool(clock)
        .build();
    let running = Serve::new()
        .agent(ServedAgent::new(agent))
        .a2a("127.0.0.1:0".parse().unwrap())
        .api_key("a2a-key")
        .start()
        .await
        .unwrap();
    let base = format!("http://{}", running.address(Surface::A2a).unwrap());
    let card = json_of(common::http().get(format!("{base}/assistant/.well-known/agent-card.json"))).await;
    assert_eq!(
        card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"], "bearer",
        "{card}"
    );
    assert_eq!(
        card["securityRequirements"][0]["schemes"]["bearer"],
        json!({"list": []}),
        "{card}"
    );
    let send = json!({"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {
        "messageId": "m", "role": "ROLE_USER", "parts": [{"text": "hi"}]}}});
    let refused = common::http()
        .post(format!("{base}/assistant"))
        .json(&send)
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 401);
    let keyed =
        |request: reqwest::RequestBuilder| request.bearer_auth("a2a-key").header("a2a-version", "1.0");
    let answered = json_of(keyed(
        common::http().post(format!("{base}/assistant")).json(&send),
    ))
    .await;
    assert_eq!(
        answered["result"]["task"]["status"]["state"], "TASK_STATE_COMPLETED",
        "{answered}"
    );
    // The extended card, for a client with the key: every tool a skill.
    assert_eq!(card["capabilities"]["extendedAgentCard"], true, "{card}");
    let extended = json_of(keyed(
        common::http().get(format!("{base}/assistant/extendedAgentCard")),
    ))
    .await;
    let skills: Vec<&str> = extended["skills"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(skills, ["assistant", "clock"], "{extended}");
    running.shutdown().await;
}
