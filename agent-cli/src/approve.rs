//! `--approve ask` and `--approve deny`: approvers for loopwright-core's
//! approval policy (read-only tools run without asking; see
//! `loopwright::approval::ApprovalPolicy`).

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use loopwright::preflight::{Plan, PlanApprover, PlanDecision, Preflight};
use loopwright::{ApprovalDecision, approval::ApprovalRequest, approval::Approver};

use crate::args::ApproveMode;
use crate::escape;

/// Set while a question is on the terminal, so the spinner stays away.
pub static PROMPTING: AtomicBool = AtomicBool::new(false);

/// The terminal questions are asked on.
const TTY: &str = "/dev/tty";

/// Whether questions can be asked (a controlling terminal exists).
pub fn terminal_available() -> bool {
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(TTY)
        .is_ok()
}

/// Denies everything that needs approval.
pub struct DenyAll;

#[async_trait::async_trait]
impl Approver for DenyAll {
    async fn decide(&self, _request: &ApprovalRequest) -> ApprovalDecision {
        ApprovalDecision::Deny {
            reason: "denied by --approve deny".into(),
        }
    }
}

/// Asks on the terminal, one question at a time: `y` once, `a` for the
/// session, anything else denies.
#[derive(Default)]
pub struct TerminalApprover {
    one_at_a_time: tokio::sync::Mutex<()>,
}

#[async_trait::async_trait]
impl Approver for TerminalApprover {
    async fn decide(&self, request: &ApprovalRequest) -> ApprovalDecision {
        // Held across the question on purpose: two questions must not interleave.
        let _turn = self.one_at_a_time.lock().await;
        let input = request.input.to_string();
        let shown: String = input.chars().take(300).collect();
        let question = format!(
            "\r\x1b[2Kallow {} {}? [y]es / [a]lways / [N]o: ",
            escape::line(&request.tool),
            escape::line(&shown)
        );
        PROMPTING.store(true, Ordering::SeqCst);
        let answer = tokio::task::spawn_blocking(move || ask(&question)).await;
        PROMPTING.store(false, Ordering::SeqCst);
        match answer.ok().flatten().as_deref().map(str::trim) {
            Some("y" | "Y" | "yes") => ApprovalDecision::Approve,
            Some("a" | "A" | "always") => ApprovalDecision::ApproveForSession,
            _ => ApprovalDecision::Deny {
                reason: "the user said no".into(),
            },
        }
    }
}

/// `--plan`: how the proposed plan is answered, per `--approve`: asked on
/// the terminal (`ask`), approved (`auto`; the plan is shown on stderr),
/// rejected (`deny`: the plan is shown and the run ends, a dry run), or
/// left pending (`defer`: the run is stored, `loopwright resume RUN_ID
/// --approve plan` follows it).
pub fn preflight(mode: ApproveMode) -> Preflight {
    match mode {
        ApproveMode::Auto => Preflight::with_approver(|_: &Plan| PlanDecision::Approve),
        ApproveMode::Ask => Preflight::with_approver(TerminalPlanApprover),
        ApproveMode::Deny => {
            Preflight::with_approver(|_: &Plan| PlanDecision::reject("rejected by --approve deny"))
        }
        ApproveMode::Defer => Preflight::defer(),
    }
}

/// Shows the plan on the terminal and asks: `y` approves, anything else
/// rejects.
struct TerminalPlanApprover;

#[async_trait::async_trait]
impl PlanApprover for TerminalPlanApprover {
    async fn review(&self, plan: &Plan) -> PlanDecision {
        let question = format!(
            "\r\x1b[2KThe agent proposes this plan:\n{}Go ahead? [y]es / [N]o: ",
            escape::plan(plan)
        );
        PROMPTING.store(true, Ordering::SeqCst);
        let answer = tokio::task::spawn_blocking(move || ask(&question)).await;
        PROMPTING.store(false, Ordering::SeqCst);
        match answer.ok().flatten().as_deref().map(str::trim) {
            Some("y" | "Y" | "yes") => PlanDecision::Approve,
            _ => PlanDecision::reject("the user said no"),
        }
    }
}

/// Write `question` to the terminal and read one line from it.
fn ask(question: &str) -> Option<String> {
    let mut tty = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(TTY)
        .ok()?;
    tty.write_all(question.as_bytes()).ok()?;
    tty.flush().ok()?;
    let mut line = String::new();
    std::io::BufReader::new(tty).read_line(&mut line).ok()?;
    Some(line)
}

/// An `input_requested` event of the run or of one of its sub-agents: the
/// question and its responder.
pub fn input_request(
    event: &loopwright::AgentEvent,
) -> Option<(
    &loopwright::user_input::UserInputRequest,
    &loopwright::user_input::UserInputResponder,
)> {
    match event {
        loopwright::AgentEvent::InputRequested {
            request, responder, ..
        } => Some((request, responder)),
        loopwright::AgentEvent::SubAgent { event, .. } => input_request(event),
        _ => None,
    }
}

/// Ask an MCP server's question (elicitation) on the terminal, off the
/// event loop; without a terminal it is left unanswered, which declines it.
pub fn answer_on_terminal(
    request: loopwright::user_input::UserInputRequest,
    responder: loopwright::user_input::UserInputResponder,
) {
    if !terminal_available() {
        return;
    }
    tokio::spawn(async move {
        // One question at a time, as for approvals.
        let _turn = QUESTIONS.lock().await;
        PROMPTING.store(true, Ordering::SeqCst);
        let answer = tokio::task::spawn_blocking(move || ask_user(&request)).await;
        PROMPTING.store(false, Ordering::SeqCst);
        responder.respond(answer.unwrap_or(loopwright::user_input::UserInputAnswer::Cancel));
    });
}

/// Terminal questions of the run, one at a time.
static QUESTIONS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

/// The questions of one request: accept, decline or cancel, then each
/// field of a form (empty keeps the server's default).
fn ask_user(request: &loopwright::user_input::UserInputRequest) -> loopwright::user_input::UserInputAnswer {
    use loopwright::{user_input::UserInputAnswer, user_input::UserInputKind};
    let intro = match &request.kind {
        UserInputKind::Url { url, .. } => format!(
            "\r\x1b[2K{} asks: {}\nOpen this page: {url}\nDone? [y]es / [d]ecline / [C]ancel: ",
            request.source, request.message
        ),
        _ => format!(
            "\r\x1b[2K{} asks: {}\nAnswer? [y]es / [d]ecline / [C]ancel: ",
            request.source, request.message
        ),
    };
    match ask(&intro).as_deref().map(str::trim) {
        Some("y" | "Y" | "yes") => {}
        Some("d" | "D" | "decline") => return UserInputAnswer::Decline,
        _ => return UserInputAnswer::Cancel,
    }
    let UserInputKind::Form { schema } = &request.kind else {
        return UserInputAnswer::Accept { content: None };
    };
    let mut content = serde_json::Map::new();
    let properties = schema.get("properties").and_then(serde_json::Value::as_object);
    for (name, property) in properties.into_iter().flatten() {
        let kind = property
            .get("type")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("string");
        let choices = property
            .get("enum")
            .and_then(serde_json::Value::as_array)
            .map(|e| format!(" one of {}", serde_json::Value::Array(e.clone())))
            .unwrap_or_default();
        let default = property
            .get("default")
            .map(|d| format!(" [{d}]"))
            .unwrap_or_default();
        let title = property
            .get("description")
            .or_else(|| property.get("title"))
            .and_then(serde_json::Value::as_str)
            .map(|t| format!(" ({t})"))
            .unwrap_or_default();
        let Some(line) = ask(&format!("  {name}{title}, {kind}{choices}{default}: ")) else {
            return UserInputAnswer::Cancel;
        };
        let line = line.trim();
        if line.is_empty() {
            continue;
        }
        let value = match kind {
            "boolean" => serde_json::Value::Bool(matches!(line, "y" | "Y" | "yes" | "true")),
            "integer" | "number" => {
                serde_json::from_str(line).unwrap_or_else(|_| serde_json::Value::String(line.to_owned()))
            }
            _ => serde_json::Value::String(line.to_owned()),
        };
        content.insert(name.clone(), value);
    }
    UserInputAnswer::Accept {
        content: Some(serde_json::Value::Object(content)),
    }
}
