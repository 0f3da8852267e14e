#!/usr/bin/env node
// The fake MCP server as a real executable, for tests that need a real process.
import { runFakeMcpServer } from './standalone.js';

const code = await runFakeMcpServer();
process.exit(code);
