import { describeReplication } from './suite.js';

describeReplication('postgres');
