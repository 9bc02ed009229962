// SPDX-License-Identifier: Apache-2.0
/*
 * selftest.test.mjs - lets `node --test tests/schema/` find the self-test: Node 20's
 * runner only picks files named like *.test.mjs when given a directory.
 */
import './selftest.mjs';
