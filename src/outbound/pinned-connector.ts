import net from 'node:net';
import tls from 'node:tls';
import type { buildConnector } from 'undici';

/** What one pinned connection measured and saw; filled in as it happens. */
export interface ConnectionFacts {
  /** performance.now() when the connection was started / TCP connected / TLS done. */
  startedAt: number;
  tcpAt: number;
  tlsAt: number;
  /** Peer certificate notAfter (ISO), HTTPS only. */
  tlsExpiresAt: string | null;
}

/** Why a pinned connection failed, so the client can answer with the right code. */
export class ConnectFailure extends Error {
  constructor(
    readonly kind: 'connect_failed' | 'tls_failed' | 'timeout',
    message: string,
    override readonly cause?: unknown,
  ) {
    super(message);
    this.name = 'ConnectFailure';
  }
}

export interface PinnedTarget {
  /** The checked address to dial (never resolved again). */
  address: string;
  port: number;
  https: boolean;
  /** The URL's host name: SNI and certificate identity (not sent as SNI when it is an IP literal). */
  hostname: string;
  /** Trust to verify with; undefined uses Node's defaults (with NODE_EXTRA_CA_CERTS). */
  secureContext?: tls.SecureContext | undefined;
  connectTimeoutMs: number;
}

/**
 * An undici `connect` function that dials only `target.address`, whatever undici asks for: the
 * address the guard checked is the one connected to, so a second DNS answer (rebinding) never
 * matters. TLS verifies the certificate against the URL's host name as usual. The connect timeout
 * covers TCP and the TLS handshake.
 */
export function pinnedConnector(target: PinnedTarget, facts: ConnectionFacts): buildConnector.connector {
  return (_opts, callback) => {
    facts.startedAt = performance.now();
    let settled = false;
    const finish = (err: ConnectFailure | null, socket: net.Socket | null) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err) {
        socket?.destroy();
        callback(err, null);
      } else callback(null, socket!);
    };
    const ipLiteralHost = net.isIP(target.hostname) !== 0;
    const socket: net.Socket = target.https
      ? tls.connect({
          host: target.address,
          port: target.port,
          servername: ipLiteralHost ? undefined : target.hostname,
          // Identity is checked against the URL's host, not the dialled address.
          checkServerIdentity: (_host, cert) => tls.checkServerIdentity(target.hostname, cert),
          secureContext: target.secureContext,
          ALPNProtocols: ['http/1.1'],
        })
      : net.connect({ host: target.address, port: target.port });
    socket.setNoDelay(true);
    const timer = setTimeout(() => {
      finish(
        new ConnectFailure(
          'timeout',
          `Connecting to ${target.address}:${target.port} took longer than ${target.connectTimeoutMs} ms`,
        ),
        socket,
      );
    }, target.connectTimeoutMs);
    socket.once('connect', () => {
      facts.tcpAt = performance.now();
      if (!target.https) {
        facts.tlsAt = facts.tcpAt;
        finish(null, socket);
      }
    });
    if (target.https) {
      socket.once('secureConnect', () => {
        facts.tlsAt = performance.now();
        const cert = (socket as tls.TLSSocket).getPeerCertificate();
        const notAfter = cert && cert.valid_to ? new Date(cert.valid_to) : null;
        facts.tlsExpiresAt = notAfter && !Number.isNaN(notAfter.getTime()) ? notAfter.toISOString() : null;
        finish(null, socket);
      });
    }
    socket.once('error', (err: NodeJS.ErrnoException) => {
      // An error after TCP connected but before the handshake finished is a TLS failure.
      const kind = target.https && facts.tcpAt > 0 ? 'tls_failed' : 'connect_failed';
      const what = kind === 'tls_failed' ? 'TLS handshake with' : 'Connecting to';
      finish(
        new ConnectFailure(
          kind,
          `${what} ${target.hostname} (${target.address}:${target.port}) failed: ${err.message}`,
          err,
        ),
        socket,
      );
    });
  };
}
