// SPDX-License-Identifier: Apache-2.0
/*
 * selftest.mjs - tests of validate-pod.mjs: good pods pass, each kind of bad pod is
 * caught at the right path, and the command line reports and exits as documented.
 *
 * Run: node --test tests/schema/   (finds selftest.test.mjs, which loads this file)
 *  or: node --test tests/schema/selftest.mjs
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { checkPod, parsePods } from './validate-pod.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const CLI = join(HERE, 'validate-pod.mjs');

/* A pod as kube-apiserver sends it to a webhook after defaulting, already mutated. */
function goodPod() {
    return {
        apiVersion: 'v1',
        kind: 'Pod',
        metadata: {
            name: 'mpi-job-mpimaster-0',
            namespace: 'default',
            labels: { 'volcano.sh/job-name': 'mpi-job', 'volcano.sh/task-index': '0' },
            annotations: { 'scheduling.k8s.io/group-name': 'mpi-job-1234' },
            ownerReferences: [{
                apiVersion: 'batch.volcano.sh/v1alpha1', kind: 'Job', name: 'mpi-job',
                uid: '1234', controller: true, blockOwnerDeletion: true,
            }],
            managedFields: [{
                manager: 'vc-controller-manager', operation: 'Update', apiVersion: 'v1',
                time: '2026-11-30T04:05:06Z', fieldsType: 'FieldsV1',
                fieldsV1: { 'f:metadata': { 'f:labels': { '.': {} } } },
            }],
        },
        spec: {
            hostname: 'mpi-job-mpimaster-0',
            subdomain: 'mpi-job',
            schedulerName: 'volcano',
            restartPolicy: 'OnFailure',
            dnsPolicy: 'ClusterFirst',
            terminationGracePeriodSeconds: 30,
            securityContext: {},
            enableServiceLinks: true,
            priority: 0,
            preemptionPolicy: 'PreemptLowerPriority',
            serviceAccountName: 'default',
            tolerations: [
                { key: 'node.kubernetes.io/not-ready', operator: 'Exists', effect: 'NoExecute',
                  tolerationSeconds: 300 },
            ],
            containers: [{
                name: 'mpimaster',
                image: 'volcanosh/example-mpi:0.0.3',
                command: ['/bin/sh', '-c', 'sleep 1'],
                env: [{ name: 'A', value: '1' }, { name: 'A', value: '2' }], /* legal */
                ports: [{ containerPort: 22, name: 'mpijob-port', protocol: 'TCP' }],
                resources: { limits: { cpu: '2', memory: '4Gi', 'nvidia.com/gpu': '1' } },
                volumeMounts: [
                    { name: 'mpi-job-svc', mountPath: '/etc/volcano' },
                    { name: 'kube-api-access-abcde', readOnly: true,
                      mountPath: '/var/run/secrets/kubernetes.io/serviceaccount' },
                ],
                terminationMessagePath: '/dev/termination-log',
                terminationMessagePolicy: 'File',
                imagePullPolicy: 'IfNotPresent',
            }],
            volumes: [
                { name: 'mpi-job-svc', configMap: { name: 'mpi-job-svc', defaultMode: 420 } },
                { name: 'kube-api-access-abcde', projected: { defaultMode: 420, sources: [
                    { serviceAccountToken: { expirationSeconds: 3607, path: 'token' } },
                    { configMap: { name: 'kube-root-ca.crt',
                                   items: [{ key: 'ca.crt', path: 'ca.crt' }] } },
                    { downwardAPI: { items: [{ path: 'namespace', fieldRef:
                        { apiVersion: 'v1', fieldPath: 'metadata.namespace' } }] } },
                ] } },
            ],
        },
    };
}

const paths = (problems) => problems.map((p) => p.path);

test('a defaulted, mutated pod has no problems', () => {
    assert.deepEqual(checkPod(goodPod()), []);
});

test('an unknown field is reported at its path', () => {
    const pod = goodPod();
    pod.spec.containers[0].evn = [{ name: 'X', value: 'y' }];
    pod.spec.volumes[0].configMap.defaultmode = 420;
    pod.metadata.ownerReferences[0].controler = true;
    pod.spec.hostnames = 'x';
    const got = checkPod(pod);
    assert.deepEqual(paths(got).sort(), [
        'metadata.ownerReferences[0].controler',
        'spec.containers[0].evn',
        'spec.hostnames',
        'spec.volumes[0].configMap.defaultmode',
    ]);
    assert.ok(got.every((p) => /unknown field/.test(p.message)));
});

test('an unknown field inside an env entry and a port is reported', () => {
    const pod = goodPod();
    pod.spec.containers[0].env[0].valu = 'x';
    pod.spec.containers[0].ports[0].port = 22;
    assert.deepEqual(paths(checkPod(pod)).sort(), [
        'spec.containers[0].env[0].valu',
        'spec.containers[0].ports[0].port',
    ]);
});

test('a wrong type is reported, without unknown-field noise below it', () => {
    const pod = goodPod();
    pod.spec.containers[0].ports[0].containerPort = '22';
    pod.spec.containers[0].env[1].value = 2;
    pod.spec.tolerations = { key: 'x' };
    const got = checkPod(pod);
    assert.deepEqual(paths(got).sort(), [
        'spec.containers[0].env[1].value',
        'spec.containers[0].ports[0].containerPort',
        'spec.tolerations',
    ]);
    const port = got.find((p) => p.path === 'spec.containers[0].ports[0].containerPort');
    assert.equal(port.message, 'must be integer');
});

test('a missing required field is reported at the field', () => {
    const pod = goodPod();
    delete pod.spec.containers[0].name;
    delete pod.spec.containers[0].volumeMounts[0].mountPath;
    const got = checkPod(pod);
    assert.deepEqual(paths(got).sort(), [
        'spec.containers[0].name',
        'spec.containers[0].volumeMounts[0].mountPath',
    ]);
    assert.ok(got.every((p) => p.message === 'required field missing'));
});

test('a duplicate port name in one container is caught; across containers it is fine', () => {
    const pod = goodPod();
    pod.spec.containers[0].ports.push({ containerPort: 2222, name: 'mpijob-port' });
    const sidecar = structuredClone(pod.spec.containers[0]);
    sidecar.name = 'sidecar';
    sidecar.ports = [{ containerPort: 22, name: 'mpijob-port' }];
    pod.spec.containers.push(sidecar);
    const got = checkPod(pod);
    assert.deepEqual(paths(got), ['spec.containers[0].ports[1].name']);
    assert.match(got[0].message, /duplicate port name "mpijob-port"/);
});

test('port name rules and containerPort range', () => {
    const pod = goodPod();
    pod.spec.containers[0].ports = [
        { containerPort: 0, name: 'zero' },
        { containerPort: 65536, name: 'pytorchjob-port-x' },
        { containerPort: 65535, name: 'Upper' },
        { containerPort: 1, name: '1234' },
        { containerPort: 2, name: 'a--b' },
        { containerPort: 3, name: 'ok-15-chars-abc' },
    ];
    assert.deepEqual(paths(checkPod(pod)), [
        'spec.containers[0].ports[0].containerPort',
        'spec.containers[0].ports[1].name',
        'spec.containers[0].ports[1].containerPort',
        'spec.containers[0].ports[2].name',
        'spec.containers[0].ports[3].name',
        'spec.containers[0].ports[4].name',
    ]);
});

test('a volumeMount naming a missing volume is caught', () => {
    const pod = goodPod();
    pod.spec.containers[0].volumeMounts.push({ name: 'mpi-job-ssh', mountPath: '/root/.ssh' });
    const got = checkPod(pod);
    assert.deepEqual(paths(got), ['spec.containers[0].volumeMounts[2].name']);
    assert.match(got[0].message, /volume "mpi-job-ssh" not found/);
});

test('duplicate volume names and duplicate mountPaths are caught', () => {
    const pod = goodPod();
    pod.spec.volumes.push({ name: 'mpi-job-svc', configMap: { name: 'other' } });
    pod.spec.containers[0].volumeMounts.push({ name: 'mpi-job-svc', mountPath: '/etc/volcano' });
    assert.deepEqual(paths(checkPod(pod)), [
        'spec.volumes[2].name',
        'spec.containers[0].volumeMounts[2].mountPath',
    ]);
});

test('init containers: unique names against containers, mounts checked too', () => {
    const pod = goodPod();
    pod.spec.initContainers = [
        { name: 'wait-for-master', image: 'busybox:1.36.1' },
        { name: 'mpimaster', image: 'busybox:1.36.1',
          volumeMounts: [{ name: 'nope', mountPath: '/x' }] },
    ];
    assert.deepEqual(paths(checkPod(pod)), [
        'spec.initContainers[1].name',
        'spec.initContainers[1].volumeMounts[0].name',
    ]);
});

test('hostname and subdomain must be DNS-1123 labels of at most 63 characters', () => {
    const pod = goodPod();
    pod.spec.hostname = 'a'.repeat(64);
    pod.spec.subdomain = 'my.job';
    const got = checkPod(pod);
    assert.deepEqual(paths(got), ['spec.hostname', 'spec.subdomain']);
    assert.match(got[0].message, /no more than 63/);
    pod.spec.hostname = 'a'.repeat(63);
    pod.spec.subdomain = 'my-job';
    assert.deepEqual(checkPod(pod), []);
});

test('keys that are not identifiers are quoted in paths', () => {
    const pod = goodPod();
    pod.spec.containers[0].resources['limits.x'] = {};
    assert.deepEqual(paths(checkPod(pod)), ['spec.containers[0].resources["limits.x"]']);
});

test('parsePods: single, List, array and newline-delimited input', () => {
    const a = JSON.stringify(goodPod());
    assert.equal(parsePods(a).pods.length, 1);
    assert.equal(parsePods(JSON.stringify({ kind: 'PodList', apiVersion: 'v1',
        items: [goodPod(), goodPod()] })).pods.length, 2);
    assert.equal(parsePods(JSON.stringify({ kind: 'List', apiVersion: 'v1',
        items: [goodPod()] })).pods.length, 1);
    assert.equal(parsePods(JSON.stringify([goodPod(), goodPod(), goodPod()])).pods.length, 3);
    const nd = parsePods(`${a}\n\n${a}\n{oops\n`);
    assert.equal(nd.pods.length, 2);
    assert.deepEqual(nd.errors.length, 1);
    assert.match(nd.errors[0], /^stdin:4: not JSON/);
});

function run(input, args = []) {
    return spawnSync(process.execPath, [CLI, ...args], { input, encoding: 'utf8' });
}

test('command line: good input prints "ok N pods" and exits 0', () => {
    const r = run(`${JSON.stringify(goodPod())}\n${JSON.stringify(goodPod())}\n`);
    assert.equal(r.stdout, 'ok 2 pods\n');
    assert.equal(r.status, 0);
});

test('command line: one line per problem, exit 1', () => {
    const bad = goodPod();
    bad.spec.containers[0].evn = [];
    bad.spec.containers[0].volumeMounts[0].name = 'gone';
    const r = run(JSON.stringify({ kind: 'List', apiVersion: 'v1', items: [goodPod(), bad] }));
    assert.equal(r.status, 1);
    assert.equal(r.stdout,
        'pod[1] default/mpi-job-mpimaster-0: spec.containers[0].evn: ' +
            'unknown field (not in the Pod schema)\n' +
        'pod[1] default/mpi-job-mpimaster-0: spec.containers[0].volumeMounts[0].name: ' +
            'volume "gone" not found in spec.volumes\n');
});

test('command line: empty input and unreadable file exit 2', () => {
    assert.equal(run('').status, 2);
    assert.equal(run('', ['/nonexistent/pods.json']).status, 2);
});
