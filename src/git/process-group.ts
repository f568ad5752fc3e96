import { readdirSync, readFileSync } from 'node:fs';

/** Sends SIGKILL to every process of a group; silent when it is already gone. */
export function killGroup(pgid: number): void {
  try {
    process.kill(-pgid, 'SIGKILL');
  } catch {
    // already gone
  }
}

/**
 * True while a process of the group is still running. Zombies (dead, waiting to be
 * reaped by init) do not count: on Linux, /proc tells them apart; elsewhere any
 * member counts.
 */
export function groupRunning(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
  } catch {
    return false;
  }
  let entries: string[];
  try {
    entries = readdirSync('/proc');
  } catch {
    return true;
  }
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
    } catch {
      continue;
    }
    // "<pid> (<comm>) <state> <ppid> <pgrp> …" — comm may contain spaces and parentheses.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(fields[2]) === pgid && fields[0] !== 'Z' && fields[0] !== 'X') return true;
  }
  return false;
}

/** Waits (up to `maxMs`) until no process of the group is running, re-sending SIGKILL meanwhile. */
export async function waitGroupGone(pgid: number, maxMs = 5_000): Promise<void> {
  const deadline = Date.now() + maxMs;
  while (groupRunning(pgid) && Date.now() < deadline) {
    killGroup(pgid);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}
