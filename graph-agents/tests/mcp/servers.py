"""Small MCP servers for graph-agents' tests/mcp.rs, on the official Python SDK
(mcp 2.x, which `pip install mcp-server-time` brings).

    python3 servers.py http PORT        # streamable HTTP on 127.0.0.1:PORT/mcp
    python3 servers.py https PORT CERT KEY  # the same over TLS (PEM files)
    python3 servers.py crash-once FILE  # stdio; its `flaky` tool exits the process
                                        # the first time (when FILE is missing)
"""
import os
import sys

from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("test-tools")


@server.tool()
def echo(text: str, times: int = 1) -> str:
    """Repeats the text."""
    return " ".join([text] * times)


@server.tool()
def fail(reason: str) -> str:
    """Always fails, with the reason given (an anticipated error: the SDK
    sends its message to the client, flagged isError)."""
    raise ToolError(reason)


@server.tool()
def flaky() -> str:
    """Exits the server process the first time it is called."""
    marker = sys.argv[2]
    if not os.path.exists(marker):
        open(marker, "w").close()
        os._exit(0)
    return "recovered"


if __name__ == "__main__":
    if sys.argv[1] == "http":
        server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    elif sys.argv[1] == "https":
        import uvicorn

        uvicorn.run(
            server.streamable_http_app(),
            host="127.0.0.1",
            port=int(sys.argv[2]),
            ssl_certfile=sys.argv[3],
            ssl_keyfile=sys.argv[4],
            log_level="warning",
        )
    else:
        server.run()
