//! OAuth against an authorization server this test controls (in process,
//! real sockets; see `oauth/world.rs`): the loopback sign-in listener
//! against stray and forged requests, and client credentials, refresh and
//! step-up against an authorization server that answers hostile things.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod world;

use std::sync::atomic::Ordering;
use std::time::Duration;

use loopwright_core::{ToolContext, ToolSource};
use loopwright_mcp::oauth::MemoryTokenStore;
use loopwright_mcp::{McpClientOptions, McpError, McpServerConfig, McpToolSource};
use serde_json::json;
use world::{Answer, Probes, TestBrowser, World};

/// Guard against a hang only; never an assertion on time.
const HANG_GUARD: Duration = Duration::from_secs(60);

async fn connect(config: McpServerConfig, options: McpClientOptions) -> Result<McpToolSource, McpError> {
    tokio::time::timeout(HANG_GUARD, McpToolSource::connect_with(config, options))
        .await
        .expect("connect hung")
}

/// Call `echo` and return its text.
async fn echo(source: &McpToolSource, text: &str) -> Result<String, String> {
    let tools = source.tools().await.map_err(|e| e.to_string())?;
    let tool = tools
        .into_iter()
        .find(|t| t.definition().name.ends_with("echo"))
        .expect("no echo tool");
    let out = tokio::time::timeout(
        HANG_GUARD,
        tool.call(json!({"text": text}), ToolContext::new("c")),
    )
    .await
    .expect("call hung")
    .map_err(|e| e.to_string())?;
    if out.is_error {
        return Err(out.as_text());
    }
    Ok(out.as_text())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_sign_in_listener_answers_strays_400_and_waits_for_its_redirect() {
    let world = World::start().await;
    let browser = TestBrowser::with_probes(Probes::Hostile);
    let store = MemoryTokenStore::default();
    let options = McpClientOptions::default()
        .with_token_store(store.clone())
        .with_browser(browser.clone());
    let source = connect(world.server(json!({"clientId": "app"}), "30s"), options)
        .await
        .expect("the sign-in should complete with the right redirect");
    assert_eq!(echo(&source, "hello").await.unwrap(), "hello");
    source.close().await;

    browser.delivered().await;
    let answers = browser.answers.lock().unwrap().clone();
    assert_eq!(answers.len(), 5, "{answers:#?}");
    for (answer, why) in answers[..4].iter().zip([
        "only answers GET /callback",
        "it carries no state",
        "its state does not match",
        "only answers GET /callback",
    ]) {
        assert!(answer.starts_with("400 ") && answer.contains(why), "{answer}");
        assert!(answer.contains("still waiting"), "{answer}");
    }
    assert!(answers[4].starts_with("200 Signed in"), "{answers:#?}");
    assert_eq!(browser.opened.load(Ordering::SeqCst), 1);
}

/// A PKCS#8 PEM P-256 key for JWT client assertions.
fn private_key() -> String {
    use base64::Engine as _;
    use ring::signature::{ECDSA_P256_SHA256_FIXED_SIGNING, EcdsaKeyPair};
    let pkcs8 =
        EcdsaKeyPair::generate_pkcs8(&ECDSA_P256_SHA256_FIXED_SIGNING, &ring::rand::SystemRandom::new())
            .unwrap();
    let body = base64::engine::general_purpose::STANDARD.encode(pkcs8.as_ref());
    format!("-----BEGIN PRIVATE KEY-----\n{body}\n-----END PRIVATE KEY-----\n")
}

/// The two kinds of client credentials: a secret (rmcp's exchange) and a
/// JWT assertion (ours).
fn machine_configs() -> [(&'static str, serde_json::Value); 2] {
    [
        (
            "secret",
            json!({"grant": "client_credentials", "clientId": "ci", "clientSecret": "ci-secret-value"}),
        ),
        (
            "jwt",
            json!({"grant": "client_credentials", "clientId": "ci", "privateKey": private_key()}),
        ),
    ]
}

/// Connect with client credentials; the error's text when it fails.
async fn machine_connect(world: &World, oauth: &serde_json::Value) -> Result<McpToolSource, String> {
    let options = McpClientOptions::default().with_token_store(MemoryTokenStore::default());
    connect(world.server(oauth.clone(), "20s"), options)
        .await
        .map_err(|e| e.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_credentials_refuse_a_token_answer_that_is_not_a_token() {
    for (kind, oauth) in machine_configs() {
        for (what, answer) in [
            (
                "html",
                Answer::Raw(200, "text/html", b"<html>Welcome</html>".to_vec()),
            ),
            ("an error page", Answer::Raw(500, "text/plain", b"oops".to_vec())),
            (
                "a negative expires_in",
                Answer::Json(json!({"access_token": "t", "token_type": "Bearer", "expires_in": -5})),
            ),
            ("no access_token", Answer::Json(json!({"token_type": "Bearer"}))),
        ] {
            let world = World::start().await;
            world.script(|s| s.token = answer);
            let err = machine_connect(&world, &oauth).await.err();
            let err = err.unwrap_or_else(|| panic!("{kind}: {what} was taken for a token"));
            assert!(err.contains("client credentials"), "{kind}: {what}: {err}");
            assert!(!err.contains("ci-secret-value"), "{kind}: {what}: {err}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_credentials_read_a_bounded_token_answer() {
    for (kind, oauth) in machine_configs() {
        let world = World::start().await;
        // 64 MiB of whitespace before a valid token: read whole, it is one.
        world.script(|s| s.token = Answer::Padded(64 * 1024 * 1024));
        let err = machine_connect(&world, &oauth).await.err();
        let err = err.unwrap_or_else(|| panic!("{kind}: a 64 MiB token answer was read whole"));
        // rmcp's own exchange (the secret) says only "Request failed".
        assert!(
            kind == "secret" || err.contains("larger than 1024 KiB"),
            "{kind}: {err}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_credentials_survive_an_absurd_expires_in() {
    for (kind, oauth) in machine_configs() {
        let world = World::start().await;
        world.script(|s| s.expires_in = json!(u64::MAX));
        let source = machine_connect(&world, &oauth)
            .await
            .unwrap_or_else(|e| panic!("{kind}: {e}"));
        assert_eq!(echo(&source, "hi").await.unwrap(), "hi", "{kind}");
        source.close().await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_credentials_do_not_follow_a_token_endpoint_redirect() {
    for (kind, oauth) in machine_configs() {
        let world = World::start().await;
        let stray = format!("{}/stray/token", world.shared.stray);
        world.script(|s| s.token = Answer::Redirect(stray));
        let err = machine_connect(&world, &oauth).await.err();
        assert!(err.is_some(), "{kind}: the redirect's token was used");
        assert!(
            world.shared.logged("STRAY").is_empty(),
            "{kind}: {:?}",
            world.shared.logged("STRAY")
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_credentials_refuse_metadata_of_another_issuer_or_redirected() {
    for (kind, oauth) in machine_configs() {
        let world = World::start().await;
        let stray = world.shared.stray.clone();
        world.script(|s| {
            s.metadata = Some(json!({
                "issuer": stray, "authorization_endpoint": format!("{stray}/authorize"),
                "token_endpoint": format!("{stray}/token"), "response_types_supported": ["code"]
            }))
        });
        let err = machine_connect(&world, &oauth).await.err();
        assert!(
            err.is_some_and(|e| e.contains("issuer")),
            "{kind}: another issuer's metadata was used"
        );

        let world = World::start().await;
        let stray = format!("{}/.well-known/oauth-authorization-server", world.shared.stray);
        world.script(|s| s.metadata_redirect = Some(stray));
        assert!(
            machine_connect(&world, &oauth).await.is_err(),
            "{kind}: a redirected metadata document was used"
        );
        assert!(world.shared.logged("STRAY").is_empty(), "{kind}");
        assert!(world.shared.logged("POST /token").is_empty(), "{kind}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_credentials_give_up_on_a_token_endpoint_that_never_answers() {
    for (kind, oauth) in machine_configs() {
        let world = World::start().await;
        world.script(|s| s.token = Answer::Stall);
        let options = McpClientOptions::default().with_token_store(MemoryTokenStore::default());
        let err = connect(world.server(oauth, "2s"), options).await.err();
        assert!(matches!(err, Some(McpError::Timeout { .. })), "{kind}: {err:?}");
    }
}

/// The default metadata with its token endpoint replaced (plain http on a
/// host that is not loopback: nothing may be sent there).
fn with_insecure_token_endpoint(world: &World) {
    let issuer = world.shared.issuer.clone();
    world.script(|s| {
        s.metadata = Some(json!({
            "issuer": issuer, "authorization_endpoint": format!("{issuer}/authorize"),
            "token_endpoint": "http://as.example.invalid/token",
            "response_types_supported": ["code"], "code_challenge_methods_supported": ["S256"],
            "token_endpoint_auth_methods_supported": ["client_secret_post", "private_key_jwt", "none"]
        }))
    });
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credentials_go_to_no_plain_http_token_endpoint_off_loopback() {
    for (kind, oauth) in machine_configs() {
        let world = World::start().await;
        with_insecure_token_endpoint(&world);
        let err = machine_connect(&world, &oauth).await.err().unwrap_or_default();
        assert!(
            err.contains("token endpoint http://as.example.invalid/token is not https"),
            "{kind}: {err}"
        );
    }
    // A sign-in: refused before the browser is sent anywhere.
    let world = World::start().await;
    with_insecure_token_endpoint(&world);
    let browser = TestBrowser::default();
    let options = McpClientOptions::default()
        .with_token_store(MemoryTokenStore::default())
        .with_browser(browser.clone());
    let err = connect(world.server(json!({"clientId": "app"}), "20s"), options)
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("is not https"), "{err}");
    assert_eq!(browser.opened.load(Ordering::SeqCst), 0);
}

/// Sign in through the browser into `store`; the stored credentials are
/// then made stale (received at the epoch), so the next session refreshes.
async fn signed_in_and_stale(world: &World, store: &MemoryTokenStore) {
    use loopwright_mcp::oauth::TokenStore;
    let options = McpClientOptions::default()
        .with_token_store(store.clone())
        .with_browser(TestBrowser::default());
    let source = connect(world.server(json!({"clientId": "app"}), "20s"), options)
        .await
        .unwrap();
    source.close().await;
    let url = &world.shared.resource;
    let mut stored = store.load(url).await.unwrap().expect("a stored sign-in");
    stored.token_received_at = Some(1);
    store.save(url, stored).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_token_goes_to_no_plain_http_token_endpoint_off_loopback() {
    let world = World::start().await;
    let store = MemoryTokenStore::default();
    signed_in_and_stale(&world, &store).await;
    with_insecure_token_endpoint(&world);
    let options = McpClientOptions::default().with_token_store(store.clone());
    let err = connect(world.server(json!({"clientId": "app"}), "20s"), options)
        .await
        .err()
        .map(|e| e.to_string())
        .unwrap_or_default();
    assert!(err.contains("is not https"), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_answered_with_a_token_for_another_resource_ends_in_needs_login() {
    let world = World::start().await;
    let store = MemoryTokenStore::default();
    signed_in_and_stale(&world, &store).await;
    world.script(|s| s.minted_for = Some("https://other.example/mcp".into()));
    let options = McpClientOptions::default().with_token_store(store.clone());
    let err = connect(world.server(json!({"clientId": "app"}), "20s"), options)
        .await
        .err();
    assert!(matches!(err, Some(McpError::NeedsLogin { .. })), "{err:?}");
    let refreshes = world.shared.logged("POST /token grant_type=refresh_token");
    assert!(!refreshes.is_empty() && refreshes.len() <= 2, "{refreshes:#?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_refresh_answered_with_no_token_fails_clearly() {
    for (what, answer) in [
        ("html", Answer::Raw(200, "text/html", b"<html>hi</html>".to_vec())),
        ("64 MiB", Answer::Padded(64 * 1024 * 1024)),
        ("a redirect", Answer::Redirect("http://127.0.0.1:9/stray".into())),
    ] {
        let world = World::start().await;
        let store = MemoryTokenStore::default();
        signed_in_and_stale(&world, &store).await;
        world.script(|s| s.refresh = answer);
        let options = McpClientOptions::default().with_token_store(store.clone());
        let err = connect(world.server(json!({"clientId": "app"}), "20s"), options)
            .await
            .err()
            .map(|e| e.to_string())
            .unwrap_or_else(|| panic!("{what}: the session started"));
        assert!(err.contains("refresh"), "{what}: {err}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_up_that_never_satisfies_the_server_stops_after_max_step_ups() {
    let world = World::start().await;
    // The call needs `write`; the authorization server only ever grants `read`.
    *world.shared.required_scope.lock().unwrap() = Some("write".into());
    world.script(|s| s.granted_scope = Some("read".into()));
    let browser = TestBrowser::default();
    let options = McpClientOptions::default()
        .with_token_store(MemoryTokenStore::default())
        .with_browser(browser.clone());
    let source = connect(world.server(json!({"clientId": "app"}), "20s"), options)
        .await
        .unwrap();
    let err = echo(&source, "hi").await.unwrap_err();
    assert!(
        err.contains(&format!(
            "after {} sign-ins for more",
            loopwright_mcp::oauth::MAX_STEP_UPS
        )),
        "{err}"
    );
    assert_eq!(
        browser.opened.load(Ordering::SeqCst),
        1 + u64::from(loopwright_mcp::oauth::MAX_STEP_UPS)
    );
    let step_ups = world.shared.logged("GET /authorize scope=");
    assert!(
        step_ups.iter().skip(1).all(|l| l.contains("write")),
        "{step_ups:#?}"
    );
    source.close().await;

    // Unattended (no browser): refused at once, naming why.
    let world = World::start().await;
    *world.shared.required_scope.lock().unwrap() = Some("write".into());
    world.script(|s| s.granted_scope = Some("read".into()));
    let store = MemoryTokenStore::default();
    signed_in_and_stale(&world, &store).await;
    let options = McpClientOptions::default().with_token_store(store);
    let source = connect(world.server(json!({"clientId": "app"}), "20s"), options)
        .await
        .unwrap();
    let err = echo(&source, "hi").await.unwrap_err();
    assert!(err.contains("nobody can sign in now"), "{err}");
    source.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_step_up_nobody_completes_ends_with_the_call() {
    let world = World::start().await;
    *world.shared.required_scope.lock().unwrap() = Some("write".into());
    world.script(|s| s.granted_scope = Some("read".into()));
    // The first sign-in completes; the person never comes back from the
    // step-up's.
    let browser = TestBrowser::stalling_from(2);
    let options = McpClientOptions::default()
        .with_token_store(MemoryTokenStore::default())
        .with_browser(browser.clone());
    let source = connect(world.server(json!({"clientId": "app"}), "20s"), options)
        .await
        .unwrap();
    let tools = source.tools().await.unwrap();
    let echo_tool = tools[0].clone();

    // Cancelled while the step-up's page is open: the call ends cancelled.
    let token = loopwright_core::CancellationToken::new();
    let ctx = ToolContext::new("c").with_cancellation(token.clone());
    let tool = echo_tool.clone();
    let call = tokio::spawn(async move { tool.call(json!({"text": "hi"}), ctx).await });
    let mut pages = browser.pages.subscribe();
    tokio::time::timeout(HANG_GUARD, pages.wait_for(|n| *n >= 2))
        .await
        .expect("no step-up sign-in")
        .unwrap();
    token.cancel();
    let ended = tokio::time::timeout(HANG_GUARD, call)
        .await
        .expect("the cancelled call waited for the sign-in")
        .unwrap();
    assert!(
        matches!(ended, Err(loopwright_core::ToolError::Cancelled)),
        "{ended:?}"
    );

    // With a deadline: the call fails when it passes, saying why.
    let ctx = ToolContext::new("c").with_deadline(tokio::time::Instant::now() + Duration::from_secs(1));
    let out = tokio::time::timeout(HANG_GUARD, echo_tool.call(json!({"text": "hi"}), ctx))
        .await
        .expect("the call outlived its deadline");
    let text = match out {
        Ok(out) => out.as_text(),
        Err(e) => e.to_string(),
    };
    assert!(
        text.contains("sign-in for more OAuth scope did not end"),
        "{text}"
    );
    source.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_person_may_take_longer_to_sign_in_than_the_connect_timeout() {
    let world = World::start().await;
    // The person takes 3 s; the server's connect timeout is 2 s, which
    // bounds the connection attempts, not the sign-in (LOGIN_TIMEOUT does).
    let browser = TestBrowser::taking(Duration::from_secs(3));
    let options = McpClientOptions::default()
        .with_token_store(MemoryTokenStore::default())
        .with_browser(browser.clone());
    let source = connect(world.server(json!({"clientId": "app"}), "2s"), options)
        .await
        .expect("the sign-in was cut by the connect timeout");
    assert_eq!(echo(&source, "hello").await.unwrap(), "hello");
    source.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_private_key_file_that_is_a_fifo_or_a_device_is_refused_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("key.pem");
    let made = std::process::Command::new("mkfifo").arg(&fifo).status().unwrap();
    assert!(made.success());
    for (path, what) in [(fifo.to_str().unwrap(), "a FIFO"), ("/dev/zero", "a device")] {
        let world = World::start().await;
        let oauth = json!({"grant": "client_credentials", "clientId": "ci", "privateKeyFile": path});
        let err = machine_connect(&world, &oauth).await.err().unwrap_or_default();
        assert!(
            err.contains(&format!(
                "cannot read the private key {path}: not a regular file ({what})"
            )),
            "{err}"
        );
    }
}
