//! `loopwright::eval::run_eval` as an application's tests call it: cases run
//! concurrently up to the limit (proved with a barrier), repeats give a pass
//! rate and a spread, a rubric is graded by the judge model, a run that
//! fails is a failed run with its reason, and the report keeps dataset order.
//! The agents' models are scripted: these tests are of the eval harness,
//! the CLI's tests run it against a real model server.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::sync::Arc;
use std::time::Duration;

use loopwright::eval::{Case, Dataset, EvalOptions, EvalTarget, Expectation, run_eval};
use loopwright::testing::{ScriptedModel, ScriptedStep};
use loopwright::{Agent, ModelError, model::ModelCapabilities, tool_fn};
use tokio::sync::Barrier;

/// Upper bound used only to detect a hang.
const HANG_GUARD: Duration = Duration::from_secs(20);

#[derive(serde::Deserialize, schemars::JsonSchema)]
struct NoArgs {}

/// Each case's agent calls `wait` (a barrier for `parties`), then answers.
struct BarrierTarget {
    barrier: Arc<Barrier>,
}

#[async_trait::async_trait]
impl EvalTarget for BarrierTarget {
    async fn agent(&self, case: &Case) -> Result<Agent, loopwright::eval::BoxError> {
        let model = ScriptedModel::new(vec![
            ScriptedStep::tool_calls(&[("c1", "wait", "{}")]),
            ScriptedStep::text(format!("done {}", case.name)),
        ]);
        let barrier = self.barrier.clone();
        let wait = tool_fn("wait", "Wait for the others.", move |_: NoArgs| {
            let barrier = barrier.clone();
            async move {
                barrier.wait().await;
                Ok("through")
            }
        });
        Ok(Agent::builder(Arc::new(model)).tool(wait).build())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cases_run_concurrently_up_to_the_limit() {
    // Four runs wait for each other: the eval ends only if all four are in
    // flight at once.
    let cases = (1..=4)
        .map(|i| {
            Case::new(format!("c{i}"), "go")
                .expect(Expectation::contains(format!("done c{i}")))
                .expect(Expectation::tool_called("wait", None))
                .expect(Expectation::MaxSteps(2))
        })
        .collect();
    let target = BarrierTarget {
        barrier: Arc::new(Barrier::new(4)),
    };
    let report = tokio::time::timeout(
        HANG_GUARD,
        run_eval(
            &Dataset::new(cases),
            &target,
            EvalOptions::default().concurrency(4),
        ),
    )
    .await
    .expect("the four runs were not in flight at once")
    .unwrap();
    assert_eq!(report.pass_rate, 1.0, "{}", report.table());
    let names: Vec<&str> = report.cases.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["c1", "c2", "c3", "c4"], "dataset order");
    assert_eq!(
        report.cases[0].runs[0].events.first().unwrap()["type"],
        "run_started"
    );
}

#[tokio::test]
async fn repeats_give_each_case_a_pass_rate_and_a_spread() {
    let model = ScriptedModel::new(
        ["yes", "no", "yes", "no"]
            .into_iter()
            .map(ScriptedStep::text)
            .collect(),
    );
    let agent = Agent::builder(Arc::new(model)).build();
    let dataset = Dataset::new(vec![
        Case::new("coin", "Yes?").expect(Expectation::Exact("yes".into())),
    ]);
    let progress = Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = progress.clone();
    let options = EvalOptions::default()
        .repeat(4)
        .concurrency(1)
        .on_progress(move |p| seen.lock().unwrap().push((p.done, p.total)));
    let report = run_eval(&dataset, &agent, options).await.unwrap();
    let case = &report.cases[0];
    assert_eq!(
        (case.pass_rate, case.mean_score, case.score_stddev),
        (0.5, 0.5, 0.5)
    );
    let repeats: Vec<u32> = case.runs.iter().map(|r| r.repeat).collect();
    assert_eq!(repeats, [1, 2, 3, 4]);
    assert_eq!(*progress.lock().unwrap(), [(1, 4), (2, 4), (3, 4), (4, 4)]);
    assert!(!report.passes(0.6) && report.passes(0.5));
    let table = report.table();
    let row: Vec<&str> = table.lines().nth(1).unwrap().split_whitespace().collect();
    assert_eq!(
        row,
        ["coin", "flaky", "2/4", "0.50", "±", "0.50", "1,1,1,1"],
        "{table}"
    );
    assert!(
        table.contains("coin (run 2):\n  - exact \"yes\": the answer is not exactly \"yes\": \"no\""),
        "{table}"
    );
    assert!(table.ends_with("2/4 runs passed (50%)\n"), "{table}");
}

#[tokio::test]
async fn a_rubric_is_graded_by_the_judge_and_a_failed_run_says_why() {
    let agent_model = ScriptedModel::new(vec![
        ScriptedStep::text("Bonjour!"),
        ScriptedStep::fail(ModelError::authentication(Some(401), "bad key")),
    ]);
    let agent = Agent::builder(Arc::new(agent_model)).build();
    let judge = ScriptedModel::new(vec![ScriptedStep::text(
        r#"{"pass": false, "reason": "It greets in French, not English."}"#,
    )])
    .with_capabilities(ModelCapabilities::default().structured_output(true, true));
    let dataset = Dataset::new(vec![
        Case::new("greet", "Greet me.").expect(Expectation::Rubric("Greets in English.".into())),
        Case::new("broken", "Anything.").expect(Expectation::contains("x")),
    ]);
    let options = EvalOptions::default()
        .concurrency(1)
        .judge(Arc::new(judge.clone()));
    let report = run_eval(&dataset, &agent, options).await.unwrap();
    let greet = &report.cases[0].runs[0];
    assert!(!greet.passed);
    assert_eq!(
        greet.expectations[0].reason.as_deref(),
        Some("It greets in French, not English.")
    );
    let asked = judge.requests()[0].messages[0].text();
    assert!(asked.contains("<answer>\nBonjour!\n</answer>"), "{asked}");
    assert!(asked.contains("Greets in English."), "{asked}");
    let broken = &report.cases[1].runs[0];
    assert!(!broken.passed);
    assert_eq!(
        broken.error.as_deref(),
        Some("the run ended with model_error: authentication failed (status 401): bad key")
    );
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["cases"][1]["runs"][0]["exit"], "model_error");
    assert_eq!(json["pass_rate"], 0.0);
}
