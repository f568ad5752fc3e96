import { describeReplication } from './suite.js';

describeReplication('sqlite');
