import { isJSONRPCRequest, isJSONRPCResultResponse, type JSONRPCMessage, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { StdioServerTransport } from '@modelcontextprotocol/server/stdio';

/** JSON-RPC "internal error": what a request gets when its HTTP call failed (docs/mcp.md). */
const INTERNAL_ERROR = -32603;

/**
 * A stdio MCP server that forwards every message to `<url>/mcp` over streamable HTTP with the key,
 * and every answer back to stdout, for hosts that only start local stdio servers. stdout carries
 * JSON-RPC only; failures are reported on stderr (and as an error answer to the request that failed).
 * Resolves when stdin closes.
 */
export async function runMcpBridge(options: { url: string; apiKey: string; report: (text: string) => void }): Promise<void> {
  const stdio = new StdioServerTransport();
  const remote = new StreamableHTTPClientTransport(new URL(`${options.url}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${options.apiKey}` } },
  });
  const initializeIds = new Set<string | number>();
  let stdinClosed = false;
  // After stdin ends the transport refuses to send, but a piped script (`… | engram mcp`) still
  // wants the answers to what it wrote: those go straight to stdout, one JSON-RPC message a line.
  const deliver = (message: JSONRPCMessage) => {
    if (stdinClosed) process.stdout.write(`${JSON.stringify(message)}\n`);
    else stdio.send(message).catch((err: unknown) => options.report(`engram mcp: ${String(err)}`));
  };

  const forward = async (message: JSONRPCMessage) => {
    if (isJSONRPCRequest(message) && message.method === 'initialize') initializeIds.add(message.id);
    try {
      await remote.send(message);
    } catch (err) {
      const text = err instanceof Error ? err.message : String(err);
      options.report(`engram mcp: ${text}`);
      if (isJSONRPCRequest(message)) {
        deliver({ jsonrpc: '2.0', id: message.id, error: { code: INTERNAL_ERROR, message: text } });
      }
    }
  };

  remote.onmessage = (message) => {
    // A 2025-era session names its protocol version in the initialize answer; later HTTP requests
    // must carry it as the MCP-Protocol-Version header, which the transport adds once told.
    if (isJSONRPCResultResponse(message) && initializeIds.delete(message.id)) {
      const version = (message.result as { protocolVersion?: unknown }).protocolVersion;
      if (typeof version === 'string') remote.setProtocolVersion(version);
    }
    deliver(message);
  };
  remote.onerror = (err) => options.report(`engram mcp: ${err.message}`);
  stdio.onerror = (err) => options.report(`engram mcp: ${err.message}`);

  const closed = new Promise<void>((resolve) => {
    stdio.onclose = () => {
      stdinClosed = true;
      resolve();
    };
  });
  // Each message is its own HTTP request, so a slow tool call does not hold up the others; a host
  // waits for the initialize answer before it sends anything else.
  const inFlight = new Set<Promise<void>>();
  stdio.onmessage = (message) => {
    const sending = forward(message).finally(() => inFlight.delete(sending));
    inFlight.add(sending);
  };

  await remote.start();
  await stdio.start();
  await closed;
  await Promise.all(inFlight);
  await remote.close();
}
