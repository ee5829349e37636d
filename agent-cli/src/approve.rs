//! `--approve ask` and `--approve deny`: approvers for loopwright-core's
//! approval policy (read-only tools run without asking; see
//! `loopwright::ApprovalPolicy`).

use std::io::{BufRead, Write};
use std::sync::atomic::{AtomicBool, Ordering};

use loopwright::preflight::{Plan, PlanApprover, PlanDecision, Preflight};
use loopwright::{ApprovalDecision, ApprovalRequest, Approver};

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
/// the terminal (`ask`), approved (`auto`; the plan is shown on stderr), or
/// rejected (`deny`: the plan is shown and the run ends, a dry run).
pub fn preflight(mode: ApproveMode) -> Preflight {
    match mode {
        ApproveMode::Auto => Preflight::with_approver(|_: &Plan| PlanDecision::Approve),
        ApproveMode::Ask => Preflight::with_approver(TerminalPlanApprover),
        ApproveMode::Deny => {
            Preflight::with_approver(|_: &Plan| PlanDecision::reject("rejected by --approve deny"))
        }
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
