import { expect, it } from 'vitest';
import * as api from './index.js';

it('exports exactly the public API', () => {
  expect(Object.keys(api).sort()).toEqual([
    'DEFAULT_TEMPLATE',
    'E2B_ERROR_CODES',
    'createBackend',
    'createE2BBackend',
  ]);
});
