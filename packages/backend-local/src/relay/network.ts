import type { Socket as UdpSocket } from 'node:dgram';
import type { Server as NetServer } from 'node:net';
import { join } from 'node:path';
import type { Logger, SandboxEvent } from '@mcpsandbox/core';
import {
  type DenialReporter,
  type Dialer,
  DnsResponder,
  type NetGrant,
  nameIsGranted,
  type Resolver,
  SANDBOX_DNS_ADDRESS,
  SecretReporter,
  type SecretRouting,
  StandInWatch,
  type SyntheticNames,
  TransparentEgress,
  transparentPorts,
} from '@mcpsandbox/egress';
import type { EgressProxy, EgressProxyOptions } from '@mcpsandbox/egress/proxy';
import { closeDir, openOwnedDir, writeFileAt } from '@mcpsandbox/host-side';

/** One socket the relay opens in the sandbox's network namespace and hands to the host. */
export interface RelaySocket {
  readonly id: string;
  readonly kind: 'tcp' | 'udp';
  readonly host: string;
  readonly port: number;
  /** Without it the sandbox does not start (the proxy); the others may fail with a warning. */
  readonly required?: boolean;
}

export interface SandboxNetworkOptions {
  readonly grants: readonly NetGrant[];
  readonly names: SyntheticNames;
  readonly proxyPort: number;
  readonly onEvent?: (event: SandboxEvent) => void;
  readonly logger: Logger;
  readonly reporter: DenialReporter;
  readonly resolve?: Resolver;
  readonly dial?: Dialer;
  /** `--secret`: connections to bound hosts are substituted (proxy and transparent path alike). */
  readonly secrets?: SecretRouting;
}

const DNS_PORT = 53;

/**
 * The host side of one sandboxed process's network: the proxy for programs that honour the
 * proxy variables, and for every other program a DNS responder and transparent listeners. All
 * their sockets are opened inside the sandbox's network namespace by the relay and served here.
 */
export class SandboxNetwork {
  readonly sockets: readonly RelaySocket[];
  /**
   * No grants: only the DNS responder, so that a lookup is refused with a hint instead of
   * failing unseen. Nothing is required of the relay, and the sandbox does not wait for it.
   */
  readonly hintsOnly: boolean;
  /**
   * The proxy, made when its socket arrives: its module (and `node:http`) loads only for a
   * sandbox with grants, while the relay opens its sockets, not at every start.
   */
  #proxy: EgressProxy | undefined;
  readonly #proxyModule: Promise<typeof import('@mcpsandbox/egress/proxy')> | undefined;
  readonly #proxyOptions: EgressProxyOptions;
  #closed = false;
  readonly #dns: DnsResponder;
  readonly #transparent: TransparentEgress;
  #attached = 0;
  readonly #failed: string[] = [];
  readonly #logger: Logger;

  constructor(options: SandboxNetworkOptions) {
    const { grants, names, reporter } = options;
    this.#logger = options.logger;
    const secretReporter = options.secrets
      ? new SecretReporter((line) => options.logger.warn(line))
      : undefined;
    const emit = (event: SandboxEvent) => {
      options.onEvent?.(event);
      reporter.observe(event);
      secretReporter?.observe(event);
    };
    const shared = {
      grants,
      onEvent: emit,
      ...(options.resolve ? { resolve: options.resolve } : {}),
      ...(options.dial ? { dial: options.dial } : {}),
      ...(options.secrets ? { secrets: options.secrets } : {}),
    };
    this.#proxyOptions = shared;
    this.#transparent = new TransparentEgress({ ...shared, names });
    // A stand-in in a looked-up name (a `*.suffix` grant would resolve it) is misuse, never a secret.
    const watch = options.secrets ? new StandInWatch(options.secrets.bound, emit) : undefined;
    this.#dns = new DnsResponder({
      addressFor: (name) => {
        watch?.check(name, 'dns');
        return nameIsGranted(grants, name) ? (names.addressFor(name) ?? 'exhausted') : undefined;
      },
      refused: (name) => reporter.denied({ kind: 'name', value: name }, undefined, 'dns'),
      invalid: () => reporter.invalid('dns'),
    });
    const ports = transparentPorts(grants, [DNS_PORT, options.proxyPort]);
    for (const port of [DNS_PORT, options.proxyPort]) {
      if (grants.some((grant) => grant.kind !== 'ip' && grant.port === port)) {
        options.logger.warn(
          `port ${port} is the sandbox's own (${port === DNS_PORT ? 'DNS' : 'proxy'}): connections to it ` +
            'reach a granted name only through the proxy variables (HTTPS_PROXY)',
        );
      }
    }
    this.hintsOnly = grants.length === 0;
    this.#proxyModule = this.hintsOnly ? undefined : import('@mcpsandbox/egress/proxy');
    // A failure to load is reported when the proxy's socket arrives (#attachProxy).
    this.#proxyModule?.catch(() => {});
    const dns: RelaySocket[] = [
      { id: 'dns-udp', kind: 'udp', host: SANDBOX_DNS_ADDRESS, port: DNS_PORT },
      { id: 'dns-tcp', kind: 'tcp', host: SANDBOX_DNS_ADDRESS, port: DNS_PORT },
    ];
    this.sockets = this.hintsOnly
      ? dns
      : [
          { id: 'proxy', kind: 'tcp', host: '127.0.0.1', port: options.proxyPort, required: true },
          ...dns,
          ...ports.map((port) => ({ id: `tcp-${port}`, kind: 'tcp' as const, host: '0.0.0.0', port })),
        ];
  }

  /** Takes one handle the relay sent; true once every socket has arrived. */
  attach(message: unknown, handle: unknown): boolean {
    const { id, error } = (typeof message === 'object' && message !== null ? message : {}) as {
      id?: unknown;
      error?: unknown;
    };
    const socket = this.sockets.find((s) => s.id === id);
    if (!socket) return false;
    if (typeof error === 'string' && !socket.required) {
      this.#failed.push(`${socket.kind} ${socket.host}:${socket.port} (${error.slice(0, 40)})`);
      this.#attached += 1;
      if (this.#failed.length === 1) {
        // Without grants there is no egress to lose: only the hints are missing.
        const message =
          `transparent egress is not available in this sandbox: cannot open ${this.#failed[0]}; ` +
          'programs that honour HTTPS_PROXY still reach the granted hosts';
        if (this.hintsOnly) this.#logger.debug(message);
        else this.#logger.warn(message);
      }
      return this.#attached >= this.sockets.length;
    }
    if (!handle || typeof (handle as { on?: unknown }).on !== 'function') return false;
    if (socket.id === 'proxy') this.#attachProxy(handle as NetServer);
    else if (socket.id === 'dns-udp') this.#dns.attachUdp(handle as UdpSocket);
    else if (socket.id === 'dns-tcp') this.#dns.attachTcp(handle as NetServer);
    else this.#transparent.attach(handle as NetServer);
    this.#attached += 1;
    return this.#attached >= this.sockets.length;
  }

  /** Until the proxy's module has loaded, connections wait in the listening socket's backlog. */
  #attachProxy(handle: NetServer): void {
    const loading = this.#proxyModule ?? Promise.reject(new Error('a sandbox without grants has no proxy'));
    loading.then(
      ({ EgressProxy }) => {
        if (this.#closed) {
          handle.close();
          return;
        }
        this.#proxy = new EgressProxy(this.#proxyOptions);
        this.#proxy.attach(handle);
      },
      (error: unknown) => {
        handle.close();
        this.#logger.error(`the egress proxy could not be started: ${(error as Error).message}`);
      },
    );
  }

  close(): void {
    this.#closed = true;
    this.#proxy?.close();
    this.#dns.close();
    this.#transparent.close();
  }
}

/**
 * The outer layer of a sandbox with egress: a user namespace of its own that owns the network
 * namespace, so that the relay may bind the DNS port and ports 80 and 443 there. Only the relay
 * and the inner bwrap run in it; the inner sandbox is a nested user namespace without any
 * capability, with every isolation flag of a sandbox without egress except `--unshare-net`.
 */
export function outerBwrapArgs(): string[] {
  return [
    '--unshare-user',
    '--unshare-net',
    '--uid',
    '0',
    '--gid',
    '0',
    '--cap-add',
    'ALL',
    '--die-with-parent',
    '--bind',
    '/',
    '/',
    // Its own minimal /dev: device nodes under the bind above cannot be opened.
    '--dev',
    '/dev',
  ];
}

/**
 * Runs in the outer layer, in the sandbox's network namespace, before the sandbox starts: opens
 * each socket of the plan (argv[1], JSON) and hands it to the host over the IPC channel. It ends
 * as soon as its parent (argv[2]) is gone, so it never outlives the sandbox.
 */
export function relaySource(): string {
  return [
    "const net=require('net'),dgram=require('dgram');",
    'const plan=JSON.parse(process.argv[1]);',
    "const fail=(e)=>{console.error('mcp-sandbox relay: '+e.message);process.exit(1)};",
    'const open=(i)=>{',
    'if(i===plan.length)return process.exit(0);',
    'const s=plan[i];',
    "const sock=s.kind==='udp'?dgram.createSocket('udp4'):net.createServer();",
    // The proxy is required; a socket of the transparent path that cannot be opened (a policy
    // that denies the outer layer its capability) is reported, and the relay goes on.
    "sock.on('error',(e)=>s.required?fail(e):process.send({id:s.id,error:String(e.code||e.message)},()=>open(i+1)));",
    'const sent=()=>process.send({id:s.id},sock,()=>open(i+1));',
    "if(s.kind==='udp')sock.bind(s.port,s.host,sent);else sock.listen({host:s.host,port:s.port},sent);",
    '};',
    // The sandbox may end first: the host closes its end, or the relay's parent (the outer
    // layer's shell, then the inner bwrap) exits. Either way nothing is left to do.
    // argv[2]: the pid of the shell that started the relay (the inner bwrap once it execs).
    "process.on('disconnect',()=>process.exit(0));",
    'const parent=Number(process.argv[2]);',
    'const orphaned=()=>{if(process.ppid!==parent)process.exit(0)};',
    'orphaned();',
    'setInterval(orphaned,100).unref();',
    'open(0);',
  ].join('');
}

/**
 * Writes the resolver files a sandbox with egress sees (its DNS responder, no host entries)
 * into `root`, the sandbox's host directory, which nothing inside can write.
 */
export function writeResolverFiles(root: string): { resolv: string; hosts: string; nsswitch: string } {
  const dir = openOwnedDir(root);
  // They go with the session: no sync (see writeFileAt).
  const session = { durable: false } as const;
  try {
    writeFileAt(
      dir,
      'resolv.conf',
      `nameserver ${SANDBOX_DNS_ADDRESS}\noptions timeout:2 attempts:2\n`,
      0o644,
      session,
    );
    writeFileAt(
      dir,
      'hosts',
      '127.0.0.1\tlocalhost mcp-sandbox\n::1\tlocalhost ip6-localhost ip6-loopback\n',
      0o644,
      session,
    );
    writeFileAt(
      dir,
      'nsswitch.conf',
      'passwd: files\ngroup: files\nshadow: files\nhosts: files dns\nnetworks: files\nprotocols: files\nservices: files\n',
      0o644,
      session,
    );
  } finally {
    closeDir(dir);
  }
  return {
    resolv: join(root, 'resolv.conf'),
    hosts: join(root, 'hosts'),
    nsswitch: join(root, 'nsswitch.conf'),
  };
}
