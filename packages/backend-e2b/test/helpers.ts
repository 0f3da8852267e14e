import { createE2BBackend, type E2BBackendOptions } from '../src/index.js';
import { FAKE_API_KEY, type FakeE2B } from './fake-e2b/server.js';

/** A backend pointed at the fake through the SDK's configurable API and sandbox URLs. */
export function fakeBackend(fake: FakeE2B, options: E2BBackendOptions = {}) {
  return createE2BBackend({
    hostEnv: { E2B_API_KEY: FAKE_API_KEY },
    apiUrl: fake.apiUrl,
    sandboxUrl: fake.sandboxUrl,
    requestTimeoutMs: 10_000,
    ...options,
  });
}

export async function collect(stream: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  for await (const chunk of stream) chunks.push(chunk);
  return Buffer.concat(chunks);
}
