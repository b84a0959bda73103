// Node warnings that are noise for a CLI user.

let installed = false;

/**
 * grpc-js sets the TLS ServerName to the endpoint's host even when it is an IP
 * address, and Node warns about it (DEP0123) on every connection. The client's
 * connections no longer set it for an IP (client/connection.ts); this drops that
 * one warning from any other path too. Every other warning still prints.
 */
export function silenceTlsServerNameWarning(): void {
  if (installed) return;
  installed = true;
  const original = process.emitWarning.bind(process) as (...args: unknown[]) => void;
  process.emitWarning = (warning: unknown, ...rest: unknown[]) => {
    const opts = rest[0];
    const code = typeof opts === 'object' && opts !== null ? (opts as { code?: string }).code : rest[1];
    if (code === 'DEP0123') return;
    original(warning, ...rest);
  };
}
