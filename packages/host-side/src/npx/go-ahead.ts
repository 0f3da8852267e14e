/** What the host writes to an early install step's stdin (npm-gate.js) once it may go on. */
export const GO_AHEAD = 'go\n';
