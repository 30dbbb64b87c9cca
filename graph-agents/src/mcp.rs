//! Tools from MCP servers (feature `mcp`): [`McpClient`] connects to one or
//! more Model Context Protocol servers, over a spawned process's stdio or
//! streamable HTTP (the official SDK, `rmcp`), and hands their tools out as
//! [`BoxedTool`]s for a [`ToolNode`](crate::ToolNode) or
//! [`create_react_agent`](crate::create_react_agent), as LangGraph's
//! `langchain-mcp-adapters` does.
//!
//! A tool's JSON schema goes to the model as the server gave it; the model's
//! arguments go to the server as they are. A result's text blocks become the
//! tool message's content (other blocks as JSON); a result flagged `isError`, a
//! JSON-RPC error (an unknown tool, bad arguments), a server that does not answer
//! within the [timeout](McpServer::timeout) or that went away all become error
//! tool messages the model can react to (under the default
//! [`ToolErrors`](crate::ToolErrors)). A server whose connection dropped (a
//! process that exited) is connected again, once, before a call fails.
//!
//! ```no_run
//! use graph_agents::mcp::{McpClient, McpServer};
//! use graph_agents::{create_react_agent, model::FakeChatModel};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let tools = McpClient::new()
//!     .server("time", McpServer::stdio("mcp-server-time", ["--local-timezone", "UTC"]))
//!     .server("search", McpServer::http("http://127.0.0.1:8000/mcp"))
//!     .tools()
//!     .await?;
//! let agent = create_react_agent(FakeChatModel::new(vec![]), tools).compile()?;
//! # let _ = agent;
//! # Ok(())
//! # }
//! ```

use crate::error::AgentError;
use crate::tool::{BoxedTool, ToolSpec};
use rmcp::model::{CallToolRequestParams, CallToolResult, ContentBlock};
use rmcp::service::{RunningService, ServiceError};
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::transport::{StreamableHttpClientTransport, TokioChildProcess};
use rmcp::{RoleClient, ServiceExt};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use serde_json::Value;
use std::fmt;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// How long a server may take to start, list its tools, or answer a call,
/// unless [`McpServer::timeout`] says otherwise.
pub const DEFAULT_TIMEOUT: Duration = Duration::from_secs(30);

/// How to reach one MCP server.
#[derive(Debug, Clone)]
pub struct McpServer {
    transport: Transport,
    timeout: Duration,
}

#[derive(Debug, Clone)]
enum Transport {
    Stdio {
        program: String,
        args: Vec<String>,
        env: Vec<(String, String)>,
    },
    Http {
        url: String,
        /// Trusted for https besides Mozilla's roots.
        roots: Vec<CertificateDer<'static>>,
    },
}

impl McpServer {
    /// A server run as a child process that speaks MCP on its stdin and stdout
    /// (its stderr goes to `tracing` at debug level). The process is stopped when
    /// the last of its tools is dropped.
    pub fn stdio(
        program: impl Into<String>,
        args: impl IntoIterator<Item = impl Into<String>>,
    ) -> Self {
        McpServer {
            transport: Transport::Stdio {
                program: program.into(),
                args: args.into_iter().map(Into::into).collect(),
                env: Vec::new(),
            },
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// A server at `url` speaking MCP's streamable HTTP, `http://` or
    /// `https://` (rustls on ring, trusting Mozilla's root certificates; add
    /// your own with [`root_certificate_pem`](Self::root_certificate_pem)).
    pub fn http(url: impl Into<String>) -> Self {
        McpServer {
            transport: Transport::Http {
                url: url.into(),
                roots: Vec::new(),
            },
            timeout: DEFAULT_TIMEOUT,
        }
    }

    /// Trusts the certificates in `pem` (a private CA's, or the server's own
    /// self-signed one) for this server's https, besides Mozilla's roots. An
    /// input with no certificate, or one that does not parse, is
    /// [`McpError::Certificate`]. Ignored by a stdio server.
    pub fn root_certificate_pem(mut self, pem: &[u8]) -> Result<Self, McpError> {
        let certificate = |reason: String| McpError::Certificate { reason };
        let parsed: Vec<CertificateDer<'static>> = CertificateDer::pem_slice_iter(pem)
            .collect::<Result<_, _>>()
            .map_err(|e| certificate(e.to_string()))?;
        if parsed.is_empty() {
            return Err(certificate("no `BEGIN CERTIFICATE` block found".to_owned()));
        }
        if let Transport::Http { roots, .. } = &mut self.transport {
            roots.extend(parsed);
        }
        Ok(self)
    }

    /// Sets an environment variable of the server process (stdio servers).
    pub fn env(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        if let Transport::Stdio { env, .. } = &mut self.transport {
            env.push((key.into(), value.into()));
        }
        self
    }

    /// How long the server may take to start, list its tools, or answer one call
    /// (default [`DEFAULT_TIMEOUT`]).
    pub fn timeout(mut self, timeout: Duration) -> Self {
        self.timeout = timeout;
        self
    }

    fn describe(&self) -> String {
        match &self.transport {
            Transport::Stdio { program, args, .. } => std::iter::once(program.as_str())
                .chain(args.iter().map(String::as_str))
                .collect::<Vec<_>>()
                .join(" "),
            Transport::Http { url, .. } => url.clone(),
        }
    }
}

/// What went wrong reaching an MCP server or listing its tools.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The server process could not be started.
    #[error(
        "could not start the MCP server `{server}` (`{command}`): check that the program is \
         installed and on PATH"
    )]
    Spawn {
        /// The server's name.
        server: String,
        /// The command line.
        command: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },

    /// The server did not answer in time.
    #[error(
        "the MCP server `{server}` did not {operation} within {after:?}: check that it is \
         running, or allow more time with McpServer::timeout"
    )]
    Timeout {
        /// The server's name.
        server: String,
        /// What it was asked ("start", "list its tools").
        operation: &'static str,
        /// The timeout.
        after: Duration,
    },

    /// A root certificate given with [`McpServer::root_certificate_pem`] is not
    /// a PEM certificate.
    #[error(
        "the root certificate for an MCP server is not usable ({reason}): pass the PEM file of \
         the CA, or of the server's self-signed certificate"
    )]
    Certificate {
        /// What is wrong with it.
        reason: String,
    },

    /// The server failed to start the session or to list its tools: it exited,
    /// answered something that is not MCP, or returned an error.
    #[error("the MCP server `{server}` ({command}) failed to {operation}")]
    Protocol {
        /// The server's name.
        server: String,
        /// The command line or URL.
        command: String,
        /// What it was asked.
        operation: &'static str,
        /// The SDK's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
}

/// Connects to MCP servers and lists their tools (langchain-mcp-adapters'
/// `MultiServerMCPClient`).
#[derive(Debug, Clone, Default)]
pub struct McpClient {
    servers: Vec<(String, McpServer)>,
}

impl McpClient {
    /// A client with no servers yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a server under `name` (the name errors and logs use).
    pub fn server(mut self, name: impl Into<String>, server: McpServer) -> Self {
        self.servers.push((name.into(), server));
        self
    }

    /// Connects to every server (at once) and returns all their tools, server by
    /// server in the order added. The connections live as long as the tools.
    pub async fn tools(&self) -> Result<Vec<BoxedTool>, McpError> {
        let lists = self
            .servers
            .iter()
            .map(|(name, server)| tools_of(name.clone(), server.clone()));
        let lists = futures::future::try_join_all(lists).await?;
        Ok(lists.into_iter().flatten().collect())
    }
}

type Service = RunningService<RoleClient, ()>;

/// One server's session, replaced when the connection drops.
struct Connection {
    name: String,
    server: McpServer,
    service: Mutex<Arc<Service>>,
}

impl fmt::Debug for Connection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Connection")
            .field("name", &self.name)
            .field("server", &self.server)
            .finish_non_exhaustive()
    }
}

async fn tools_of(name: String, server: McpServer) -> Result<Vec<BoxedTool>, McpError> {
    let service = connect(&name, &server).await?;
    let listed = within(&name, &server, "list its tools", service.list_all_tools()).await?;
    let listed = listed.map_err(|e| McpError::Protocol {
        server: name.clone(),
        command: server.describe(),
        operation: "list its tools",
        source: Box::new(e),
    })?;
    let connection = Arc::new(Connection {
        name,
        server,
        service: Mutex::new(Arc::new(service)),
    });
    Ok(listed
        .into_iter()
        .map(|tool| {
            let spec = ToolSpec {
                name: tool.name.to_string(),
                description: tool.description.as_deref().unwrap_or_default().to_owned(),
                parameters: Value::Object(tool.input_schema.as_ref().clone()),
            };
            let connection = Arc::clone(&connection);
            let tool_name: Arc<str> = Arc::from(tool.name.as_ref());
            BoxedTool::from_fn(spec, move |args| {
                call(Arc::clone(&connection), Arc::clone(&tool_name), args)
            })
        })
        .collect())
}

/// `future`, or [`McpError::Timeout`] after the server's timeout.
async fn within<T>(
    name: &str,
    server: &McpServer,
    operation: &'static str,
    future: impl Future<Output = T>,
) -> Result<T, McpError> {
    tokio::time::timeout(server.timeout, future)
        .await
        .map_err(|_| McpError::Timeout {
            server: name.to_owned(),
            operation,
            after: server.timeout,
        })
}

async fn connect(name: &str, server: &McpServer) -> Result<Service, McpError> {
    let protocol = |e: Box<dyn std::error::Error + Send + Sync>| McpError::Protocol {
        server: name.to_owned(),
        command: server.describe(),
        operation: "start an MCP session",
        source: e,
    };
    match &server.transport {
        Transport::Stdio { program, args, env } => {
            let mut command = tokio::process::Command::new(program);
            command.args(args).envs(env.iter().map(|(k, v)| (k, v)));
            let (transport, stderr) = TokioChildProcess::builder(command)
                .stderr(std::process::Stdio::piped())
                .spawn()
                .map_err(|source| McpError::Spawn {
                    server: name.to_owned(),
                    command: server.describe(),
                    source,
                })?;
            if let Some(stderr) = stderr {
                tokio::spawn(log_stderr(name.to_owned(), stderr));
            }
            within(name, server, "start", ().serve(transport))
                .await?
                .map_err(|e| protocol(Box::new(e)))
        }
        Transport::Http { url, roots } => {
            let client = http_client(roots).map_err(|source| McpError::Protocol {
                server: name.to_owned(),
                command: server.describe(),
                operation: "set up its HTTP client",
                source,
            })?;
            let config = StreamableHttpClientTransportConfig::with_uri(url.as_str());
            let transport = StreamableHttpClientTransport::with_client(client, config);
            within(name, server, "start", ().serve(transport))
                .await?
                .map_err(|e| protocol(Box::new(e)))
        }
    }
}

/// The HTTP client of a streamable-HTTP server: TLS by rustls on ring with
/// Mozilla's roots and `roots` (rmcp's own default client would need a
/// process-wide crypto provider), no idle connections kept (rmcp's choice:
/// reusing one whose last body was not read stalls ~40 ms on Linux), and only
/// same-origin 307 / 308 redirects followed (they keep the JSON-RPC body; any
/// other would lose it or send the session to another host).
fn http_client(
    roots: &[CertificateDer<'static>],
) -> Result<reqwest_mcp::Client, Box<dyn std::error::Error + Send + Sync>> {
    let mut store = rustls::RootCertStore {
        roots: webpki_roots::TLS_SERVER_ROOTS.to_vec(),
    };
    for root in roots {
        store.add(root.clone())?;
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let tls = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()?
        .with_root_certificates(store)
        .with_no_client_auth();
    let redirects = reqwest_mcp::redirect::Policy::custom(|attempt| {
        let same_origin = attempt
            .previous()
            .last()
            .is_some_and(|from| from.origin() == attempt.url().origin());
        let keeps_body = matches!(attempt.status().as_u16(), 307 | 308);
        if same_origin && keeps_body && attempt.previous().len() <= 10 {
            attempt.follow()
        } else {
            attempt.stop()
        }
    });
    Ok(reqwest_mcp::Client::builder()
        .tls_backend_preconfigured(tls)
        .pool_max_idle_per_host(0)
        .redirect(redirects)
        .build()?)
}

/// Forwards a server process's stderr to `tracing`, line by line, so that its
/// logs neither clutter the terminal nor fill the pipe.
async fn log_stderr(name: String, stderr: tokio::process::ChildStderr) {
    use tokio::io::AsyncBufReadExt;
    let mut lines = tokio::io::BufReader::new(stderr).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        tracing::debug!(server = %name, "{line}");
    }
}

/// Calls `tool` on the connection's server; a dropped connection is made again
/// once. Every failure is an [`AgentError::ToolFailed`], which the tool node
/// turns into an error message for the model.
async fn call(
    connection: Arc<Connection>,
    tool: Arc<str>,
    args: Value,
) -> Result<String, AgentError> {
    let failed = |message: String| AgentError::ToolFailed {
        tool: tool.to_string(),
        message,
    };
    let arguments = match args {
        Value::Object(map) => map,
        Value::Null => serde_json::Map::new(),
        other => {
            return Err(AgentError::InvalidToolArgs {
                tool: tool.to_string(),
                args: other.to_string(),
                reason: "the arguments must be a JSON object".to_owned(),
            })
        }
    };
    let params = CallToolRequestParams::new(tool.to_string()).with_arguments(arguments);
    let mut reconnected = false;
    loop {
        let service = current(&connection);
        let outcome = within(
            &connection.name,
            &connection.server,
            "answer the call",
            service.call_tool(params.clone()),
        )
        .await;
        match outcome {
            Err(timeout) => return Err(failed(timeout.to_string())),
            Ok(Ok(result)) => return content(result).map_err(failed),
            Ok(Err(ServiceError::TransportClosed | ServiceError::TransportSend(_)))
                if !reconnected =>
            {
                reconnected = true;
                tracing::info!(server = %connection.name, "MCP connection lost; connecting again");
                let fresh = connect(&connection.name, &connection.server)
                    .await
                    .map_err(|e| failed(report(&e)))?;
                replace(&connection, fresh);
            }
            Ok(Err(ServiceError::McpError(e))) => return Err(failed(e.message.to_string())),
            Ok(Err(e)) => {
                return Err(failed(format!(
                    "the MCP server `{}` failed: {e}",
                    connection.name
                )))
            }
        }
    }
}

fn current(connection: &Connection) -> Arc<Service> {
    let guard = connection
        .service
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    Arc::clone(&guard)
}

fn replace(connection: &Connection, fresh: Service) {
    let mut guard = connection
        .service
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner);
    *guard = Arc::new(fresh);
}

/// An error and its causes on one line, for the model.
fn report(error: &dyn std::error::Error) -> String {
    let mut out = error.to_string();
    let mut source = error.source();
    while let Some(e) = source {
        out.push_str(": ");
        out.push_str(&e.to_string());
        source = e.source();
    }
    out
}

/// A call's result as the tool message's content: the text blocks, one per
/// line; other blocks as JSON; the structured content when there is no block.
/// A result flagged as an error is `Err` with that content.
fn content(result: CallToolResult) -> Result<String, String> {
    let mut parts: Vec<String> = Vec::with_capacity(result.content.len());
    for block in &result.content {
        match block {
            ContentBlock::Text(text) => parts.push(text.text.clone()),
            other => parts.push(serde_json::to_string(other).unwrap_or_default()),
        }
    }
    let mut text = parts.join("\n");
    if parts.is_empty()
        && let Some(structured) = &result.structured_content
    {
        text = structured.to_string();
    }
    if result.is_error == Some(true) {
        Err(text)
    } else {
        Ok(text)
    }
}
