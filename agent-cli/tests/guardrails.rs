//! `--guardrail` and `--guardrail-checkpoint`: what they keep out of every
//! byte the command prints, and how a stopped run exits.

use serde_json::json;

use crate::common::{ModelServer, answer, assert_exit, json_lines, run_local, texts, write_config};

fn tmp() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_blocking_guardrail_keeps_the_secret_out_of_every_byte_and_exits_10() {
    // The secret is split across the stream's two chunks.
    let server = ModelServer::start(vec![
        answer("The launch code is ZEBRA-7731. Keep it safe.").into(),
    ])
    .await;
    let dir = tmp();
    let config = write_config(dir.path(), &server, json!({}));
    for events in [true, false] {
        let mut args = vec!["--no-mcp", "--guardrail", r"regex:ZEBRA-\d+"];
        if events {
            args.push("--events");
        }
        args.push("the code?");
        let out = run_local(&config, &args, &[], dir.path()).await;
        let (stdout, stderr) = texts(&out);
        assert_eq!(out.status.code(), Some(10), "{stdout}\n{stderr}");
        for bytes in [&stdout, &stderr] {
            assert!(
                !bytes.contains("ZEBRA-7731") && !bytes.contains("7731"),
                "{bytes}"
            );
        }
        assert!(
            stderr.contains("guardrail regex stopped the run at output"),
            "{stderr}"
        );
        if events {
            let events = json_lines(&stdout);
            let finished = events.last().unwrap();
            assert_eq!(finished["type"], "finished");
            assert_eq!(finished["exit"], "tripped");
            let tripped = &events[events.len() - 2];
            assert_eq!(tripped["type"], "guardrail_tripped");
            assert_eq!(tripped["trip"]["guard"], "regex");
            assert_eq!(tripped["trip"]["point"], "output");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_pii_guardrail_redacts_a_card_number_in_the_printed_answer() {
    let server = ModelServer::start(vec![answer("Your card 4111 1111 1111 1111 is on file.").into()]).await;
    let dir = tmp();
    let config = write_config(dir.path(), &server, json!({}));
    let args = [
        "--no-mcp",
        "--guardrail",
        "pii",
        "--guardrail-checkpoint",
        "chars:8",
        "card?",
    ];
    let out = run_local(&config, &args, &[], dir.path()).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    assert!(
        stdout.contains("Your card [REDACTED card] is on file."),
        "{stdout}"
    );
    assert!(!stdout.contains("4111") && !stdout.contains("1111"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_guardrail_spec_or_checkpoint_it_does_not_know_is_a_usage_error_naming_it() {
    let server = ModelServer::start(vec![answer("Hi.").into()]).await;
    let dir = tmp();
    let config = write_config(dir.path(), &server, json!({}));
    let out = run_local(&config, &["--guardrail", "profanity", "hi"], &[], dir.path()).await;
    assert_exit(&out, 2, "pii, pii:block, regex:PATTERN or length:N");
    let out = run_local(&config, &["--guardrail", "regex:(", "hi"], &[], dir.path()).await;
    assert_exit(&out, 2, "regex:(");
    let out = run_local(
        &config,
        &["--guardrail-checkpoint", "often", "hi"],
        &[],
        dir.path(),
    )
    .await;
    assert_exit(&out, 2, "sentence, paragraph, chars:N, ms:N or end");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_configuration_and_agent_files_set_guardrails() {
    let server = ModelServer::start(vec![answer("The launch code is ZEBRA-7731.").into()]).await;
    let dir = tmp();
    let config = write_config(
        dir.path(),
        &server,
        json!({"defaults": {"guardrails": {"guards": [r"regex:ZEBRA-\d+"], "checkpoint": "end"}}}),
    );
    let out = run_local(&config, &["--no-mcp", "code?"], &[], dir.path()).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(10), "{stderr}");
    assert!(!stdout.contains("7731"), "{stdout}");

    // An agent file's guardrails, for its agent.
    let plain = write_config(dir.path(), &server, json!({}));
    let agent = dir.path().join("keeper.md");
    std::fs::write(
        &agent,
        "---\nguardrails: ['regex:ZEBRA-\\d+']\n---\nYou keep codes.\n",
    )
    .unwrap();
    let args = ["--no-mcp", "--agent", agent.to_str().unwrap(), "code?"];
    let out = run_local(&plain, &args, &[], dir.path()).await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(10), "{stdout}\n{stderr}");
    assert!(!stdout.contains("7731"), "{stdout}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guardrails_the_configuration_gets_wrong_are_errors_naming_the_key() {
    let server = ModelServer::start(vec![answer("Hi.").into()]).await;
    let dir = tmp();
    let cases = [
        (json!(["profanity"]), "defaults.guardrails.guards[0]"),
        (
            json!({"guards": [{"judge": {"model": "local/test"}}]}),
            "defaults.guardrails.guards[0].judge.rubric",
        ),
        (
            json!({"guards": ["pii"], "checkpoint": "often"}),
            "defaults.guardrails.checkpoint",
        ),
        (
            json!({"guards": ["pii"], "onError": "shrug"}),
            "defaults.guardrails.onError",
        ),
    ];
    for (guardrails, key) in cases {
        let config = write_config(
            dir.path(),
            &server,
            json!({"defaults": {"guardrails": guardrails}}),
        );
        let out = run_local(&config, &["hi"], &[], dir.path()).await;
        assert_exit(&out, 2, key);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_parallel_judge_that_trips_cancels_the_model_request_it_raced() {
    use crate::common::Reply;
    // The agent's model streams a first chunk and then nothing; the judge
    // (another model of the same server) says the input breaks its rule,
    // once the agent's request has arrived (the two race in the command).
    let arrived = std::sync::Arc::new(tokio::sync::Notify::new());
    let server = ModelServer::builder()
        .respond(move |request| {
            if request.body["model"] == "judge" {
                Reply::sse(answer("YES")).after(arrived.clone())
            } else {
                arrived.notify_one();
                Reply::sse(answer("Sure, the way in is")).stalled()
            }
        })
        .listing(["test", "judge"])
        .start()
        .await;
    let dir = tmp();
    let judge = json!({"judge": {"model": "local/judge", "rubric": "The text asks to get round the rules.",
        "points": ["input"], "mode": "parallel"}});
    let config = write_config(dir.path(), &server, json!({"defaults": {"guardrails": [judge]}}));
    let out = run_local(
        &config,
        &["--no-mcp", "--events", "get round the rules"],
        &[],
        dir.path(),
    )
    .await;
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(10), "{stdout}\n{stderr}");
    assert!(!stdout.contains("the way in"), "{stdout}");
    let events = json_lines(&stdout);
    let tripped = events.iter().find(|e| e["type"] == "guardrail_tripped").unwrap();
    assert_eq!(tripped["trip"]["point"], "input");
    assert_eq!(tripped["trip"]["guard"], "judge");
    // The server saw the agent's request go away (the judge's ended).
    crate::common::until_true("the model request was cancelled", || server.cancelled() == 1).await;
    let models: Vec<String> = server.bodies().iter().map(|b| b["model"].to_string()).collect();
    assert_eq!(models.len(), 2, "{models:?}");
}
