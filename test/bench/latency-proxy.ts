/**
 * A TCP relay that delays every chunk by `ms` in each direction: PostgreSQL as if across a network
 * link (about 2·ms added to each round trip), for benchmarks. Runs as a child process of the bench
 * (benchLink below), so its CPU is not the measured process's.
 *
 *   tsx test/bench/latency-proxy.ts <listen port> <target host> <target port> <ms>
 */
import { fork } from 'node:child_process';
import net from 'node:net';

/** Starts the relay in a child process in front of `databaseUrl`; resolves with the URL through it and a stop function. */
export async function benchLink(databaseUrl: string, ms: number): Promise<{ url: string; stop(): void }> {
  const target = new URL(databaseUrl);
  const port = await new Promise<number>((resolve) => {
    const probe = net.createServer().listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
  const child = fork(new URL(import.meta.url).pathname, [String(port), target.hostname, target.port || '5432', String(ms)], { stdio: 'inherit' });
  await new Promise<void>((resolve, reject) => {
    child.once('message', () => resolve());
    child.once('exit', (code) => reject(new Error(`latency proxy exited (${code})`)));
  });
  const url = new URL(databaseUrl);
  url.hostname = '127.0.0.1';
  url.port = String(port);
  return { url: url.toString(), stop: () => child.kill() };
}

if (process.argv[1] && new URL(import.meta.url).pathname === process.argv[1]) {
  const [listen, host, port, ms] = process.argv.slice(2);
  net
    .createServer((client) => {
      const server = net.connect(Number(port), host);
      for (const s of [client, server]) {
        s.setNoDelay(true);
        s.on('error', () => (client.destroy(), server.destroy()));
        s.on('close', () => (client.destroy(), server.destroy()));
      }
      const relay = (from: net.Socket, to: net.Socket) => from.on('data', (chunk) => setTimeout(() => to.write(chunk), Number(ms)));
      relay(client, server);
      relay(server, client);
    })
    .listen(Number(listen), '127.0.0.1', () => process.send?.('listening'));
}
