export {
  FAKE_API_KEY,
  FAKE_ENVD_VERSION,
  type FakeCreateRequest,
  type FakeE2B,
  type FakeE2BOptions,
  type FakeSandbox,
  type FakeStart,
  type HostileEnvd,
  type HostileFrame,
  startFakeE2B,
} from './fake-e2b.js';
