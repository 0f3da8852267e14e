/**
 * Written by `wrap` right after `run` when the launcher is a path of the user's choosing: ls and
 * unwrap recognise the entry by it, whatever the launcher is called. `run` accepts and ignores it.
 * A module of its own: `run` registers it without loading the config code.
 */
export const WRAP_MARKER = '--wrapped';
