import { describeFeeds } from './suite.js';

describeFeeds('postgres');
