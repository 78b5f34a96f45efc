// WebSocket → TCP proxy so @neondatabase/serverless (Pool/Client) can reach a plain local Postgres.
// Neon's driver speaks the Postgres wire protocol over a WebSocket; in production Neon terminates it,
// here we just pipe bytes. Client config that goes with it:
//   neonConfig.wsProxy = (host, port) => `127.0.0.1:${proxyPort}/v1?address=${host}:${port}`;
//   neonConfig.useSecureWebSocket = false; neonConfig.pipelineTLS = false; neonConfig.pipelineConnect = false;
//   neonConfig.webSocketConstructor = ws;  // Node 20 only (no global WebSocket there)
// Neon's HTTP `neon()` mode has no local equivalent; only the WebSocket Pool/Client works through this.
import http from 'node:http';
import net from 'node:net';
import { pathToFileURL } from 'node:url';
import { WebSocketServer, type WebSocket } from 'ws';

// The proxy is an open relay by design, so it must never dial anything but this machine.
const ALLOWED_HOSTS = new Set(['127.0.0.1', 'localhost']);

export interface NeonWsProxy {
  port: number;
  /** Messages the drivers have sent so far: each waits for Postgres's answer, so about one a round trip. */
  sent(): number;
  /** Connections the drivers have opened so far. */
  opened(): number;
  close(): Promise<void>;
}

/** `latencyMs`: added to each round trip (half each way), to stand in for the hop from a Worker to Neon. */
export async function startNeonWsProxy({ port = 0, latencyMs = 0 }: { port?: number; latencyMs?: number } = {}): Promise<NeonWsProxy> {
  let sent = 0;
  let opened = 0;
  // Timers of equal delay fire in the order they were set, so the bytes keep their order.
  const later = (f: () => void) => (latencyMs > 0 ? setTimeout(f, latencyMs / 2) : f());
  // GET /stats answers what the two counters below say (JSON), for tests that run where this process is not.
  const server = http.createServer((req, res) => {
    if (req.url !== '/stats') return void res.writeHead(404).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ sent, opened }));
  });
  const wss = new WebSocketServer({ server });
  const live = new Set<{ ws: WebSocket; sock: net.Socket }>();

  wss.on('connection', (ws, req) => {
    const address = new URL(req.url ?? '/', 'http://x').searchParams.get('address') ?? '';
    const i = address.lastIndexOf(':');
    const host = address.slice(0, i),
      targetPort = Number(address.slice(i + 1));
    if (i < 0 || !ALLOWED_HOSTS.has(host) || !Number.isInteger(targetPort) || targetPort <= 0) {
      ws.close(1008, 'address not allowed');
      return;
    }
    opened += 1;
    const sock = net.connect(targetPort, host);
    sock.setNoDelay(true); // the driver sends many tiny protocol messages; Nagle's algorithm would stall each one
    const pair = { ws, sock };
    live.add(pair);
    // The driver writes the startup packet immediately on open, before TCP has connected.
    const pending: Buffer[] = [];
    sock.on('connect', () => {
      for (const b of pending.splice(0)) sock.write(b);
    });
    ws.on('message', (data) => {
      sent += 1;
      const b = data as Buffer;
      later(() => (sock.connecting ? pending.push(b) : sock.write(b)));
    });
    sock.on('data', (d) => later(() => ws.readyState === 1 && ws.send(d)));
    const end = () => {
      live.delete(pair);
      sock.destroy();
      if (ws.readyState <= 1) ws.close();
    };
    sock.on('close', end);
    sock.on('error', end);
    ws.on('close', end);
    ws.on('error', end);
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', resolve);
  });
  const bound = (server.address() as net.AddressInfo).port;
  return {
    port: bound,
    sent: () => sent,
    opened: () => opened,
    close: () =>
      new Promise<void>((resolve) => {
        // ws 8 leaves existing connections open on close(); a pooled driver would keep the process alive.
        for (const { ws, sock } of live) {
          sock.destroy();
          ws.terminate();
        }
        live.clear();
        wss.close(() => server.close(() => resolve()));
        server.closeAllConnections(); // keep-alive readers of /stats
      }),
  };
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) {
  const proxy = await startNeonWsProxy({ port: Number(process.env.WS_PROXY_PORT ?? 55433) });
  console.log(`neon ws proxy listening on 127.0.0.1:${proxy.port}`);
  const stop = () => void proxy.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}
