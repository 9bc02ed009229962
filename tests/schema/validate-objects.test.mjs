// SPDX-License-Identifier: Apache-2.0
/*
 * validate-objects.test.mjs - tests of validate-objects.mjs: good objects of every kind
 * manifests/ uses pass; unknown fields, wrong types and enums, unknown kinds and the
 * API-server rules are caught at the right path; the command line reports and exits as
 * documented.
 *
 * Run: node --test tests/schema/   (also runs selftest.mjs)
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';

import { checkObject, parseObjectsText } from './validate-objects.mjs';

const HERE = dirname(fileURLToPath(import.meta.url));
const CLI = join(HERE, 'validate-objects.mjs');

const LABELS = { 'app.kubernetes.io/name': 'hook' };

function deployment() {
    return {
        apiVersion: 'apps/v1',
        kind: 'Deployment',
        metadata: { name: 'hook', namespace: 'hook-system', labels: LABELS },
        spec: {
            replicas: 2,
            selector: { matchLabels: LABELS },
            strategy: { type: 'RollingUpdate',
                        rollingUpdate: { maxUnavailable: 0, maxSurge: 1 } },
            template: {
                metadata: { labels: { ...LABELS, extra: 'x' } },
                spec: {
                    securityContext: { runAsNonRoot: true,
                                       seccompProfile: { type: 'RuntimeDefault' } },
                    containers: [{
                        name: 'hook',
                        image: 'hook:1',
                        args: ['serve', '--port=8443'],
                        ports: [{ name: 'https', containerPort: 8443, protocol: 'TCP' }],
                        readinessProbe: {
                            httpGet: { path: '/readyz', port: 'https', scheme: 'HTTPS' } },
                        resources: { requests: { cpu: '100m', memory: '64Mi' },
                                     limits: { cpu: '1', memory: '256Mi' } },
                        securityContext: { readOnlyRootFilesystem: true,
                                           capabilities: { drop: ['ALL'] } },
                        volumeMounts: [{ name: 'certs', mountPath: '/certs', readOnly: true }],
                    }],
                    volumes: [{ name: 'certs',
                                secret: { secretName: 'hook-tls', defaultMode: 288 } }],
                },
            },
        },
    };
}

function webhookConfig() {
    return {
        apiVersion: 'admissionregistration.k8s.io/v1',
        kind: 'MutatingWebhookConfiguration',
        metadata: { name: 'hook' },
        webhooks: [{
            name: 'pods.hook.example.com',
            admissionReviewVersions: ['v1'],
            clientConfig: {
                caBundle: 'Y2E=',
                service: { name: 'hook', namespace: 'hook-system', path: '/m', port: 443 },
            },
            rules: [{ operations: ['CREATE'], apiGroups: [''], apiVersions: ['v1'],
                      resources: ['pods'], scope: 'Namespaced' }],
            failurePolicy: 'Fail',
            sideEffects: 'None',
            timeoutSeconds: 10,
            reinvocationPolicy: 'IfNeeded',
        }],
    };
}

function goodObjects() {
    return [
        { apiVersion: 'v1', kind: 'Namespace', metadata: { name: 'hook-system' } },
        { apiVersion: 'v1', kind: 'ServiceAccount',
          metadata: { name: 'hook', namespace: 'hook-system' } },
        { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole',
          metadata: { name: 'system:hook' },
          rules: [{ apiGroups: ['batch.volcano.sh'], resources: ['jobs'], verbs: ['get'] }] },
        { apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'RoleBinding',
          metadata: { name: 'hook', namespace: 'hook-system' },
          roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'Role', name: 'hook' },
          subjects: [{ kind: 'ServiceAccount', name: 'hook', namespace: 'hook-system' }] },
        deployment(),
        { apiVersion: 'v1', kind: 'Service', metadata: { name: 'hook', namespace: 'hook-system' },
          spec: { selector: LABELS, ports: [{ name: 'https', port: 443, targetPort: 'https' }] } },
        { apiVersion: 'policy/v1', kind: 'PodDisruptionBudget',
          metadata: { name: 'hook', namespace: 'hook-system' },
          spec: { minAvailable: 1, selector: { matchLabels: LABELS } } },
        webhookConfig(),
    ];
}

const paths = (problems) => problems.map((p) => p.path);

test('good objects of every kind manifests/ uses have no problems', async () => {
    for (const obj of goodObjects())
        assert.deepEqual(await checkObject(obj), [], `${obj.kind}`);
});

test('an unknown field is reported at its path, naming the schema', async () => {
    const d = deployment();
    d.spec.template.spec.containers[0].securityContext.readOnlyRootFileSystem = true;
    d.spec.replica = 2;
    const got = await checkObject(d);
    assert.deepEqual(paths(got).sort(), [
        'spec.replica',
        'spec.template.spec.containers[0].securityContext.readOnlyRootFileSystem',
    ]);
    assert.ok(got.every((p) =>
        p.message === 'unknown field (not in the apps/v1 Deployment schema)'));
});

test('wrong types and enum values are reported', async () => {
    const w = webhookConfig();
    w.webhooks[0].failurePolicy = 'Fial';
    w.webhooks[0].timeoutSeconds = '10';
    w.webhooks[0].clientConfig.caBundle = 'not base64!';
    const got = await checkObject(w);
    assert.deepEqual(paths(got).sort(), [
        'webhooks[0].clientConfig.caBundle',
        'webhooks[0].failurePolicy',
        'webhooks[0].timeoutSeconds',
    ]);
    assert.equal(got.find((p) => p.path === 'webhooks[0].failurePolicy').message,
        'must be one of ["Fail","Ignore"]');
    assert.equal(got.find((p) => p.path === 'webhooks[0].timeoutSeconds').message,
        'must be integer');
});

test('a missing required field is reported at the field', async () => {
    const rb = goodObjects()[3];
    delete rb.roleRef.name;
    const got = await checkObject(rb);
    assert.deepEqual(got, [{ path: 'roleRef.name', message: 'required field missing' }]);
});

test('unknown, malformed and non-object kinds have no schema', async () => {
    const cases = [
        [{ apiVersion: 'v1', kind: 'Podd', metadata: { name: 'x' } },
         'no schema for apiVersion v1 kind Podd (not a kind kubernetes-models knows)'],
        [{ apiVersion: 'v1', kind: 'Container', metadata: { name: 'x' } },
         'no schema for apiVersion v1 kind Container (not a kind kubernetes-models knows)'],
        [{ apiVersion: 'apps/v1', kind: 'Service', metadata: { name: 'x' } },
         'no schema for apiVersion apps/v1 kind Service (not a kind kubernetes-models knows)'],
        [{ apiVersion: '../../x/v1', kind: 'Pod', metadata: { name: 'x' } },
         'no schema for apiVersion "../../x/v1" kind "Pod" (malformed)'],
        [{ apiVersion: 'v1', kind: '../Pod', metadata: { name: 'x' } },
         'no schema for apiVersion "v1" kind "../Pod" (malformed)'],
    ];
    for (const [obj, message] of cases)
        assert.deepEqual(await checkObject(obj), [{ path: '', message }]);
    assert.deepEqual(await checkObject({ metadata: { name: 'x' } }), [
        { path: 'apiVersion', message: 'required field missing' },
        { path: 'kind', message: 'required field missing' },
    ]);
    assert.deepEqual(await checkObject([]),
        [{ path: '', message: 'an object must be a JSON object' }]);
});

test('prometheus-operator kinds (manifests/overlays/prometheus): checked by their CRD schema',
    async () => {
        const sm = {
            apiVersion: 'monitoring.coreos.com/v1', kind: 'ServiceMonitor',
            metadata: { name: 'hook', namespace: 'hook-system' },
            spec: {
                selector: { matchLabels: LABELS },
                endpoints: [{ port: 'https', scheme: 'https', interval: '30s',
                    tlsConfig: { serverName: 'hook.hook-system.svc',
                        ca: { secret: { name: 'hook-tls', key: 'ca.crt' } } } }],
            },
        };
        const rule = {
            apiVersion: 'monitoring.coreos.com/v1', kind: 'PrometheusRule',
            metadata: { name: 'hook', namespace: 'hook-system' },
            spec: { groups: [{ name: 'hook', rules: [{ alert: 'HookDown', expr: 'up == 0',
                for: '5m', labels: { severity: 'critical' },
                annotations: { summary: 'down' } }] }] },
        };
        assert.deepEqual(await checkObject(sm), []);
        assert.deepEqual(await checkObject(rule), []);
        sm.spec.endpoints[0].schem = 'https';
        sm.spec.endpoints[0].interval = 30;
        assert.deepEqual(await checkObject(sm), [
            { path: 'spec.endpoints[0].interval', message: 'must be string' },
            { path: 'spec.endpoints[0].schem',
              message: 'unknown field (not in the monitoring.coreos.com/v1 ServiceMonitor schema)' },
        ]);
        delete rule.spec.groups[0].rules[0].expr;
        assert.deepEqual(await checkObject(rule), [
            { path: 'spec.groups[0].rules[0].expr', message: 'required field missing' },
        ]);
        assert.deepEqual(await checkObject({ apiVersion: 'monitoring.coreos.com/v1',
            kind: 'ServiceMonitr', metadata: { name: 'x' } }), [{ path: '', message:
            'no schema for apiVersion monitoring.coreos.com/v1 kind ServiceMonitr ' +
            '(not a kind kubernetes-models knows)' }]);
    });

test('cert-manager kinds (manifests/overlays/cert-manager): checked by their CRD schema',
    async () => {
        const issuer = {
            apiVersion: 'cert-manager.io/v1', kind: 'Issuer',
            metadata: { name: 'hook-ca', namespace: 'hook-system' },
            spec: { ca: { secretName: 'hook-ca' } },
        };
        const cert = {
            apiVersion: 'cert-manager.io/v1', kind: 'Certificate',
            metadata: { name: 'hook', namespace: 'hook-system' },
            spec: { secretName: 'hook-tls', dnsNames: ['hook.hook-system.svc'],
                duration: '8760h', privateKey: { algorithm: 'RSA', size: 2048 },
                issuerRef: { name: 'hook-ca', kind: 'Issuer', group: 'cert-manager.io' } },
        };
        assert.deepEqual(await checkObject(issuer), []);
        assert.deepEqual(await checkObject(cert), []);
        cert.spec.dnsName = ['hook.hook-system.svc'];
        cert.spec.privateKey.algorithm = 'DSA';
        delete cert.spec.secretName;
        assert.deepEqual(await checkObject(cert), [
            { path: 'spec.secretName', message: 'required field missing' },
            { path: 'spec.privateKey.algorithm', message: 'must be one of ["RSA","ECDSA","Ed25519"]' },
            { path: 'spec.dnsName',
              message: 'unknown field (not in the cert-manager.io/v1 Certificate schema)' },
        ]);
        assert.deepEqual(await checkObject({ apiVersion: 'cert-manager.io/v1',
            kind: 'Certficate', metadata: { name: 'x' } }), [{ path: '', message:
            'no schema for apiVersion cert-manager.io/v1 kind Certficate ' +
            '(not a kind kubernetes-models knows)' }]);
    });

test('metadata.name: required, and well-formed for the kind', async () => {
    const [ns, sa, cr] = goodObjects();
    delete sa.metadata.name;
    assert.deepEqual(paths(await checkObject(sa)), ['metadata.name']);
    ns.metadata.name = 'a.b';                       /* a subdomain, not a label */
    assert.match((await checkObject(ns))[0].message, /is not a DNS-1123 label/);
    const svc = goodObjects()[5];
    svc.metadata.name = '1hook';                    /* DNS-1035: starts with a letter */
    assert.match((await checkObject(svc))[0].message, /is not a DNS-1035 label/);
    cr.metadata.name = 'a/b';                       /* RBAC: a path segment */
    assert.deepEqual(paths(await checkObject(cr)), ['metadata.name']);
    const d = deployment();
    d.metadata.name = 'Hook';
    assert.match((await checkObject(d))[0].message, /is not a DNS-1123 subdomain/);
});

test('a workload selector must match its template; the pod template follows the pod rules',
    async () => {
        const d = deployment();
        d.spec.selector.matchLabels = { ...LABELS, tier: 'web' };
        d.spec.template.spec.containers[0].ports.push({ name: 'https', containerPort: 9443 });
        d.spec.template.spec.containers[0].volumeMounts[0].name = 'cert';
        const got = await checkObject(d);
        assert.deepEqual(paths(got), [
            'spec.template.spec.containers[0].ports[1].name',
            'spec.template.spec.containers[0].volumeMounts[0].name',
            'spec.selector',
        ]);
        assert.match(got[1].message, /volume "cert" not found in spec.template.spec.volumes/);
        assert.match(got[2].message, /selector does not match template labels/);
    });

test('webhook names: fully qualified and unique', async () => {
    const w = webhookConfig();
    w.webhooks.push({ ...structuredClone(w.webhooks[0]) });
    w.webhooks.push({ ...structuredClone(w.webhooks[0]), name: 'pods.hook' });
    const got = await checkObject(w);
    assert.deepEqual(paths(got), ['webhooks[1].name', 'webhooks[2].name']);
    assert.match(got[0].message, /duplicate webhook name "pods.hook.example.com"/);
    assert.match(got[1].message, /must be a fully-qualified name/);
});

test('parseObjectsText: List, array and newline-delimited input', () => {
    const objs = goodObjects();
    assert.equal(parseObjectsText(JSON.stringify({ apiVersion: 'v1', kind: 'List',
        items: objs })).objects.length, objs.length);
    assert.equal(parseObjectsText(JSON.stringify(objs)).objects.length, objs.length);
    const nd = parseObjectsText(objs.map((o) => JSON.stringify(o)).join('\n') + '\n{oops\n');
    assert.equal(nd.objects.length, objs.length);
    assert.equal(nd.errors.length, 1);
    assert.match(nd.errors[0], new RegExp(`^stdin:${objs.length + 1}: not JSON`));
});

function run(input, args = []) {
    return spawnSync(process.execPath, [CLI, ...args], { input, encoding: 'utf8' });
}

test('command line: good input prints "ok N objects" and exits 0', () => {
    const r = run(JSON.stringify(goodObjects()));
    assert.equal(r.stdout, `ok ${goodObjects().length} objects\n`);
    assert.equal(r.status, 0);
});

test('command line: one line per problem, exit 1', () => {
    const d = deployment();
    d.spec.replica = 2;
    const r = run(JSON.stringify([goodObjects()[0], d]));
    assert.equal(r.status, 1);
    assert.equal(r.stdout, 'object[1] Deployment hook-system/hook: spec.replica: ' +
        'unknown field (not in the apps/v1 Deployment schema)\n');
});

test('command line: empty input and unreadable file exit 2', () => {
    assert.equal(run('').status, 2);
    assert.equal(run('', ['/nonexistent/objects.json']).status, 2);
});
