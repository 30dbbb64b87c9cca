//! Tools from real MCP servers: pip's `mcp-server-time` over stdio, and small
//! servers on the official Python SDK (tests/mcp/servers.py) over stdio and
//! streamable HTTP; a ReAct agent on a scripted model calling them.
//!
//! Needs `mcp-server-time` (and with it the `mcp` SDK): `.ci/run` installs it;
//! without it these tests fail and say what to install.
#![cfg(feature = "mcp")]

use graph_agents::mcp::{McpClient, McpError, McpServer};
use graph_agents::model::FakeChatModel;
use graph_agents::{
    create_react_agent, AiMessage, BoxedTool, Message, MessagesState, ToolCall, ToolStatus,
};
use graph_core::RunConfig;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::time::Duration;

const INSTALL_HINT: &str = "install the MCP time server and the Python MCP SDK with \
`python3 -m pip install mcp-server-time` (.ci/run does), then run the tests again";

/// The `mcp-server-time` program on PATH, or a failed test saying how to get it.
fn time_server() -> McpServer {
    let found = std::env::var_os("PATH").and_then(|paths| {
        std::env::split_paths(&paths)
            .map(|dir| dir.join("mcp-server-time"))
            .find(|p| p.is_file())
    });
    let Some(program) = found else {
        panic!("`mcp-server-time` is not on PATH: {INSTALL_HINT}");
    };
    McpServer::stdio(program.to_string_lossy(), ["--local-timezone", "UTC"])
}

fn servers_py() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/mcp/servers.py")
}

fn by_name<'a>(tools: &'a [BoxedTool], name: &str) -> &'a BoxedTool {
    tools
        .iter()
        .find(|t| t.name() == name)
        .unwrap_or_else(|| panic!("no tool {name}"))
}

#[tokio::test]
async fn the_time_servers_tools_are_listed_with_their_schemas_and_called() {
    let tools = McpClient::new()
        .server("time", time_server())
        .tools()
        .await
        .unwrap();
    let mut names: Vec<&str> = tools.iter().map(BoxedTool::name).collect();
    names.sort_unstable();
    assert_eq!(names, ["convert_time", "get_current_time"]);
    let convert = by_name(&tools, "convert_time");
    let params = &convert.spec().parameters;
    assert_eq!(params["type"], "object");
    assert!(
        params["properties"]["target_timezone"].is_object(),
        "{params}"
    );
    assert!(!convert.spec().description.is_empty());

    // UTC and Tokyo have no daylight saving time: the same answer every day.
    let out = convert
        .call(json!({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}))
        .await
        .unwrap();
    let out: serde_json::Value = serde_json::from_str(&out).expect("the server answers JSON");
    assert_eq!(out["target"]["timezone"], "Asia/Tokyo");
    assert!(
        out["target"]["datetime"]
            .as_str()
            .is_some_and(|t| t.contains("T21:00:00")),
        "{out}"
    );
}

#[tokio::test]
async fn a_react_agent_uses_the_time_server_and_recovers_from_its_errors() {
    let tools = McpClient::new()
        .server("time", time_server())
        .tools()
        .await
        .unwrap();
    let call = |id: &str, name: &str, args: serde_json::Value| {
        AiMessage::new("").with_tool_call(ToolCall::new(id, name, args))
    };
    let model = FakeChatModel::new(vec![
        call(
            "c1",
            "convert_time",
            json!({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Mars/Olympus"}),
        ),
        call(
            "c2",
            "convert_time",
            json!({"source_timezone": "UTC", "time": "12:00", "target_timezone": "Asia/Tokyo"}),
        ),
        AiMessage::new("Noon UTC is 21:00 in Tokyo."),
    ]);
    let agent = create_react_agent(model, tools).compile().unwrap();
    let out = agent
        .invoke(
            MessagesState::update().messages(vec![Message::human("Noon UTC in Tokyo?")]),
            &RunConfig::new(),
        )
        .await
        .unwrap();
    let answers: Vec<_> = out.messages.iter().filter_map(Message::as_tool).collect();
    assert_eq!(answers.len(), 2);
    assert_eq!(
        answers[0].status,
        ToolStatus::Error,
        "{}",
        answers[0].content
    );
    assert!(
        answers[0].content.contains("Mars/Olympus"),
        "{}",
        answers[0].content
    );
    assert_eq!(answers[1].status, ToolStatus::Success);
    assert!(
        answers[1].content.contains("T21:00:00"),
        "{}",
        answers[1].content
    );
    assert_eq!(
        out.messages.last().map(Message::text),
        Some("Noon UTC is 21:00 in Tokyo.")
    );
}

/// A free port on loopback, for a server started next.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    listener.local_addr().unwrap().port()
}

/// A child process killed when the test ends, however it ends.
struct Child(std::process::Child);

impl Drop for Child {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

async fn http_server() -> (Child, String) {
    serve(&["http"], "http").await
}

/// servers.py in `mode` (with `args` after the port) on a free port; its URL.
async fn serve(mode_and_args: &[&str], scheme: &str) -> (Child, String) {
    time_server(); // the same install brings the SDK: fail with the hint first
    let port = free_port();
    let (mode, args) = mode_and_args.split_first().expect("a mode");
    let child = std::process::Command::new("python3")
        .arg(servers_py())
        .arg(mode)
        .arg(port.to_string())
        .args(args)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .expect("python3 runs");
    let child = Child(child);
    for _ in 0..600 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return (child, format!("{scheme}://127.0.0.1:{port}/mcp"));
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("the test's MCP server did not listen on port {port} within 60 s");
}

#[tokio::test]
async fn several_servers_at_once_over_stdio_and_streamable_http() {
    let (_server, url) = http_server().await;
    let tools = McpClient::new()
        .server("time", time_server())
        .server("tools", McpServer::http(url))
        .tools()
        .await
        .unwrap();
    let names: Vec<&str> = tools.iter().map(BoxedTool::name).collect();
    for name in ["get_current_time", "convert_time", "echo", "fail", "flaky"] {
        assert!(names.contains(&name), "{names:?}");
    }
    let echo = by_name(&tools, "echo");
    assert_eq!(echo.spec().parameters["required"], json!(["text"]));
    assert_eq!(
        echo.call(json!({"text": "hi", "times": 2})).await.unwrap(),
        "hi hi"
    );

    // The tool's own error, and arguments the server rejects: both are errors
    // the tool node turns into messages for the model.
    let err = by_name(&tools, "fail")
        .call(json!({"reason": "disk full"}))
        .await
        .unwrap_err();
    assert!(err.to_string().contains("disk full"), "{err}");
    let err = echo.call(json!({"times": 2})).await.unwrap_err();
    assert!(err.to_string().contains("text"), "{err}");
    let err = echo.call(json!(["not", "an", "object"])).await.unwrap_err();
    assert!(
        matches!(err, graph_agents::AgentError::InvalidToolArgs { .. }),
        "{err}"
    );
}

#[tokio::test]
async fn a_server_process_that_exits_is_started_again_for_the_call() {
    time_server();
    let dir = std::env::temp_dir().join(format!("sg-mcp-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let marker = dir.join("crashed-once");
    let _ = std::fs::remove_file(&marker);
    let server = McpServer::stdio(
        "python3",
        [
            servers_py().to_string_lossy().into_owned(),
            "crash-once".into(),
            marker.to_string_lossy().into_owned(),
        ],
    );
    let tools = McpClient::new()
        .server("flaky", server)
        .tools()
        .await
        .unwrap();
    let out = by_name(&tools, "flaky").call(json!({})).await.unwrap();
    assert_eq!(out, "recovered");
    assert!(marker.exists(), "the first process exited in the call");
    let _ = std::fs::remove_dir_all(&dir);
}

#[tokio::test]
async fn servers_that_are_missing_hang_exit_or_talk_nonsense_are_typed_errors() {
    let quick = Duration::from_millis(1500);
    let err = McpClient::new()
        .server(
            "ghost",
            McpServer::stdio("no-such-mcp-server-program", Vec::<String>::new()),
        )
        .tools()
        .await
        .unwrap_err();
    assert!(
        matches!(&err, McpError::Spawn { server, .. } if server == "ghost"),
        "{err}"
    );

    let hangs = McpServer::stdio("python3", ["-c", "import time; time.sleep(60)"]).timeout(quick);
    let err = McpClient::new()
        .server("sleepy", hangs)
        .tools()
        .await
        .unwrap_err();
    assert!(
        matches!(&err, McpError::Timeout { server, operation: "start", .. } if server == "sleepy"),
        "{err}"
    );

    let exits = McpServer::stdio("python3", ["-c", "pass"]).timeout(quick);
    let err = McpClient::new()
        .server("gone", exits)
        .tools()
        .await
        .unwrap_err();
    assert!(
        matches!(err, McpError::Protocol { .. } | McpError::Timeout { .. }),
        "{err}"
    );

    let nonsense = McpServer::stdio(
        "python3",
        ["-c", "import sys, time\nfor line in sys.stdin: print('{\"jsonrpc\": \"2.0\", \"id\": 0, \"result\": 42}', flush=True)"],
    )
    .timeout(quick);
    let err = McpClient::new()
        .server("odd", nonsense)
        .tools()
        .await
        .unwrap_err();
    assert!(
        matches!(err, McpError::Protocol { .. } | McpError::Timeout { .. }),
        "{err}"
    );
}

/// A self-signed certificate for 127.0.0.1 and its key, made by the openssl
/// CLI in `dir` (PEM files); not a CA, as a server certificate must be.
fn self_signed_certificate(dir: &Path) -> (PathBuf, PathBuf) {
    let (cert, key) = (dir.join("cert.pem"), dir.join("key.pem"));
    let status = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
        ])
        .args(["-nodes", "-days", "2", "-subj", "/CN=127.0.0.1"])
        .args(["-addext", "subjectAltName=IP:127.0.0.1"])
        .args(["-addext", "basicConstraints=critical,CA:FALSE"])
        .args(["-addext", "extendedKeyUsage=serverAuth"])
        .arg("-keyout")
        .arg(&key)
        .arg("-out")
        .arg(&cert)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .expect("the openssl CLI runs (it makes the test's certificate)");
    assert!(status.success(), "openssl could not make a certificate");
    (cert, key)
}

#[tokio::test]
async fn an_https_server_is_reached_through_rustls_on_ring_with_its_own_root() {
    let dir = std::env::temp_dir().join(format!("sg-mcp-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (cert, key) = self_signed_certificate(&dir);
    let (cert_path, key_path) = (cert.to_string_lossy(), key.to_string_lossy());
    let (_server, url) = serve(&["https", &cert_path, &key_path], "https").await;
    let pem = std::fs::read(&cert).unwrap();

    let trusted = McpServer::http(url.as_str())
        .root_certificate_pem(&pem)
        .unwrap();
    let tools = McpClient::new()
        .server("tls", trusted)
        .tools()
        .await
        .unwrap();
    let echo = by_name(&tools, "echo");
    assert_eq!(
        echo.call(json!({"text": "over tls"})).await.unwrap(),
        "over tls"
    );

    // Mozilla's roots alone do not vouch for a self-signed certificate: the
    // same server, without its root, refuses the session (rmcp flattens the
    // TLS error underneath into its message).
    let untrusted = McpServer::http(url.as_str()).timeout(Duration::from_secs(20));
    let err = McpClient::new()
        .server("tls", untrusted)
        .tools()
        .await
        .unwrap_err();
    assert!(matches!(err, McpError::Protocol { .. }), "{err}");

    let err = McpServer::http(url.as_str())
        .root_certificate_pem(b"not a certificate")
        .unwrap_err();
    assert!(matches!(err, McpError::Certificate { .. }), "{err}");
    let _ = std::fs::remove_dir_all(&dir);
}
