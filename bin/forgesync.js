#!/usr/bin/env node
import { main } from '../dist/cli/main.js';

main(process.argv).then(
  (code) => { process.exitCode = code; },
  (error) => {
    process.stderr.write(`forgesync: ${error?.message ?? error}\n`);
    process.exitCode = 1;
  },
);
