// A TCP proxy in front of the gateway, for the resume test: a page loaded
// through it reaches Clopen as usual, until drop() cuts every connection
// (as a server going away or a network failure does, without a WebSocket
// close frame) and refuses new ones until restore().

import net from 'node:net';

export interface Proxy {
  url: string;
  /** drop resets every open connection and refuses new ones. */
  drop(): void;
  /** restore accepts connections again. */
  restore(): void;
  close(): Promise<void>;
}

export async function startProxy(target: string): Promise<Proxy> {
  const { hostname, port } = new URL(target);
  const open = new Set<net.Socket>();
  let refusing = false;
  const server = net.createServer((client) => {
    if (refusing) {
      client.resetAndDestroy();
      return;
    }
    const upstream = net.connect(Number(port), hostname);
    open.add(client);
    open.add(upstream);
    const end = () => {
      open.delete(client);
      open.delete(upstream);
      client.destroy();
      upstream.destroy();
    };
    client.on('error', end).on('close', end);
    upstream.on('error', end).on('close', end);
    client.pipe(upstream);
    upstream.pipe(client);
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const addr = server.address() as net.AddressInfo;
  return {
    url: `http://127.0.0.1:${addr.port}`,
    drop() {
      refusing = true;
      for (const s of open) s.resetAndDestroy();
      open.clear();
    },
    restore() {
      refusing = false;
    },
    close: () =>
      new Promise((ok) => {
        for (const s of open) s.destroy();
        server.close(() => ok());
      }),
  };
}
