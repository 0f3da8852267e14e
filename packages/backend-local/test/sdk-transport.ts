import type { SandboxProcess } from '@mcpsandbox/core';
import { ReadBuffer, serializeMessage } from '@modelcontextprotocol/sdk/shared/stdio.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';

/** Lets the real SDK Client talk to a server running in a sandbox, over the process's stdio. */
export class SandboxProcessTransport implements Transport {
  onclose?: () => void;
  onerror?: (error: Error) => void;
  onmessage?: (message: JSONRPCMessage) => void;
  readonly #proc: SandboxProcess;
  readonly #buffer = new ReadBuffer();

  constructor(proc: SandboxProcess) {
    this.#proc = proc;
  }

  async start(): Promise<void> {
    void (async () => {
      try {
        for await (const chunk of this.#proc.stdout) {
          this.#buffer.append(Buffer.from(chunk));
          for (let message = this.#buffer.readMessage(); message; message = this.#buffer.readMessage()) {
            this.onmessage?.(message);
          }
        }
      } catch (error) {
        this.onerror?.(error as Error);
      }
      this.onclose?.();
    })();
  }

  async send(message: JSONRPCMessage): Promise<void> {
    await this.#proc.write(Buffer.from(serializeMessage(message)));
  }

  async close(): Promise<void> {
    await this.#proc.closeStdin().catch(() => {});
  }
}
