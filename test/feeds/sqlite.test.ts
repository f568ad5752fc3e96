import { describeFeeds } from './suite.js';

describeFeeds('sqlite');
