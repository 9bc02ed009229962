#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
/*
 * validate-objects.mjs - check Kubernetes objects of any built-in kind (Deployment,
 * Service, ClusterRole, RoleBinding, PodDisruptionBudget, MutatingWebhookConfiguration,
 * ...) against the real Kubernetes schema, e.g. what `kubectl kustomize manifests/`
 * renders.
 *
 * usage: node tests/schema/validate-objects.mjs [FILE...]     (no FILE: read stdin)
 *
 * Input: a single object, a List ({"kind": "List" or "...List", "items": [...]}), a JSON
 * array, or newline-delimited objects (one JSON object a line).
 *
 * For every object, its kubernetes-models class is found from apiVersion and kind
 * (`kubernetes-models/<group>/<version>/<Kind>`, core `kubernetes-models/v1/<Kind>`,
 * custom resources from the package of CRD_PACKAGES below: prometheus-operator's
 * monitoring.coreos.com, cert-manager's cert-manager.io); an apiVersion/kind without a
 * shipped schema is a problem. Then:
 *  (a) types and required fields, (b) no field outside the schema: as for pods, see
 *      schema-check.mjs;
 *  (c) API-server validation rules the OpenAPI schema cannot express: metadata.name
 *      present and well-formed for its kind (DNS-1123 label for Namespace, DNS-1035
 *      label for Service, a path segment for RBAC objects, a DNS-1123 subdomain
 *      otherwise); for Pod and the pod templates of Deployment, StatefulSet, DaemonSet,
 *      ReplicaSet and Job the PodSpec rules of validate-pod.mjs; the matchLabels of an
 *      apps/v1 workload selecting its own template; webhook names fully qualified
 *      (at least three dot-separated segments) and unique in a webhook configuration.
 *
 * Output: one line per problem, `object[K] KIND NS/NAME: PATH: message`, exit 1;
 * otherwise `ok N objects`, exit 0. Exit 2 for unreadable or empty input or a missing
 * node_modules.
 *
 * Also importable: checkObject(obj) -> Promise<[{path, message}]>,
 * parseObjectsText(text, source) -> {objects, errors}.
 */
import {
    arr, checkSchema, invokedDirectly, isObj, objectName, parseObjects, readInputs,
} from './schema-check.mjs';

let checkPodSpec;
try {
    ({ checkPodSpec } = await import('./validate-pod.mjs'));
} catch (e) {
    process.stderr.write(`validate-objects: cannot load validate-pod.mjs (${e.message})\n`);
    process.exit(2);
}

/* apiVersion and kind become part of a module path: only what a real one looks like. */
const GROUP = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const VERSION = /^v[0-9]+((alpha|beta)[0-9]+)?$/;
const KIND = /^[A-Z][A-Za-z0-9]*$/;

/*
 * Custom resources: the npm package of kubernetes-models' family that ships the CRD's
 * schema, laid out as kubernetes-models is (`<package>/<group>/<version>/<Kind>`).
 * @kubernetes-models/prometheus-operator: ServiceMonitor, PrometheusRule, ... of
 * manifests/overlays/prometheus.
 * @kubernetes-models/cert-manager: Issuer, Certificate, ... of manifests/overlays/
 * cert-manager (generated from cert-manager v1.11.2's published cert-manager.crds.yaml,
 * as its package.json's crd-generate input says).
 */
const CRD_PACKAGES = new Map([
    ['monitoring.coreos.com', '@kubernetes-models/prometheus-operator'],
    ['cert-manager.io', '@kubernetes-models/cert-manager'],
]);

const models = new Map();

/**
 * The kubernetes-models class of apiVersion/kind: {Model} or {error} when the pair is
 * malformed or not a top-level kind that kubernetes-models ships.
 */
async function loadModel(apiVersion, kind) {
    const key = `${apiVersion} ${kind}`;
    if (models.has(key))
        return models.get(key);
    let result;
    const parts = typeof apiVersion === 'string' ? apiVersion.split('/') : [];
    const [group, version] = parts.length === 2 ? parts : ['', parts[0]];
    if (typeof kind !== 'string' || !KIND.test(kind) || typeof version !== 'string' ||
        !VERSION.test(version) || parts.length > 2 || (parts.length === 2 && !GROUP.test(group))) {
        result = { error: `no schema for apiVersion ${JSON.stringify(apiVersion)} ` +
            `kind ${JSON.stringify(kind)} (malformed)` };
    } else {
        const spec = group === '' ? `kubernetes-models/${version}/${kind}` :
            CRD_PACKAGES.has(group) ? `${CRD_PACKAGES.get(group)}/${group}/${version}/${kind}` :
            `kubernetes-models/${group}/${version}/${kind}`;
        try {
            const mod = await import(spec);
            const Model = mod[kind];
            /* v1/Container is a class too, but not an object kind of its own */
            if (typeof Model === 'function' && Model.apiVersion === apiVersion &&
                Model.kind === kind)
                result = { Model };
        } catch {
            /* not shipped: reported below */
        }
        if (!result)
            result = { error: `no schema for apiVersion ${apiVersion} kind ${kind} ` +
                '(not a kind kubernetes-models knows)' };
    }
    models.set(key, result);
    return result;
}

/* ---------- (c) validation rules the schema cannot express ---------- */

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/;
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/;
const RBAC_KINDS = new Set(['ClusterRole', 'ClusterRoleBinding', 'Role', 'RoleBinding']);
const POD_TEMPLATE_KINDS = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet',
    'Job']);
const APPS_WORKLOADS = new Set(['Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet']);
const WEBHOOK_CONFIGS = new Set(['MutatingWebhookConfiguration',
    'ValidatingWebhookConfiguration']);

/* apimachinery's name validation for obj's kind: an error message, or null. */
function nameError(kind, name) {
    const q = JSON.stringify(name);
    if (RBAC_KINDS.has(kind)) {
        /* path.ValidatePathSegmentName */
        if (name === '.' || name === '..' || name.includes('/') || name.includes('%'))
            return `${q} may not be '.' or '..' and may not contain '/' or '%'`;
        return null;
    }
    if (kind === 'Namespace') {
        if (name.length > 63 || !DNS1123_LABEL.test(name))
            return `${q} is not a DNS-1123 label (at most 63 lower case alphanumerics ` +
                "or '-', starting and ending with an alphanumeric)";
        return null;
    }
    if (kind === 'Service') {
        if (name.length > 63 || !DNS1035_LABEL.test(name))
            return `${q} is not a DNS-1035 label (at most 63 lower case alphanumerics ` +
                "or '-', starting with a letter, ending with an alphanumeric)";
        return null;
    }
    if (name.length > 253 || !DNS1123_SUBDOMAIN.test(name))
        return `${q} is not a DNS-1123 subdomain (at most 253 characters, lower case ` +
            "alphanumerics, '-' or '.', starting and ending with an alphanumeric)";
    return null;
}

function checkRules(obj) {
    const problems = [];
    const add = (path, message) => problems.push({ path, message });
    const md = isObj(obj.metadata) ? obj.metadata : {};
    if (typeof md.name === 'string' && md.name !== '') {
        const e = nameError(obj.kind, md.name);
        if (e)
            add('metadata.name', e);
    } else if (typeof md.generateName !== 'string' || md.generateName === '') {
        add('metadata.name', 'required field missing (name or generateName)');
    }

    const spec = isObj(obj.spec) ? obj.spec : null;
    if (obj.kind === 'Pod' && spec)
        problems.push(...checkPodSpec(spec, 'spec'));
    if (POD_TEMPLATE_KINDS.has(obj.kind) && spec && isObj(spec.template) &&
        isObj(spec.template.spec))
        problems.push(...checkPodSpec(spec.template.spec, 'spec.template.spec'));

    if (APPS_WORKLOADS.has(obj.kind) && spec && isObj(spec.selector) &&
        isObj(spec.selector.matchLabels)) {
        const tmd = isObj(spec.template) && isObj(spec.template.metadata) ?
            spec.template.metadata : {};
        const labels = isObj(tmd.labels) ? tmd.labels : {};
        for (const [k, v] of Object.entries(spec.selector.matchLabels)) {
            if (labels[k] !== v)
                add('spec.selector', `selector does not match template labels ` +
                    `(${JSON.stringify(k)}: ${JSON.stringify(v)} not in ` +
                    'spec.template.metadata.labels)');
        }
    }

    if (WEBHOOK_CONFIGS.has(obj.kind)) {
        const seen = new Map();
        arr(obj.webhooks).forEach((w, i) => {
            if (!isObj(w) || typeof w.name !== 'string')
                return;
            const path = `webhooks[${i}].name`;
            const segs = w.name.split('.');
            if (segs.length < 3 || !DNS1123_SUBDOMAIN.test(w.name))
                add(path, `${JSON.stringify(w.name)} must be a fully-qualified name ` +
                    '(a DNS-1123 subdomain of at least three segments)');
            if (seen.has(w.name))
                add(path, `duplicate webhook name ${JSON.stringify(w.name)} ` +
                    `(also webhooks[${seen.get(w.name)}])`);
            else
                seen.set(w.name, i);
        });
    }
    return problems;
}

/** Every problem of one object: [{path, message}] (empty when the object is fine). */
export async function checkObject(obj) {
    if (!isObj(obj))
        return [{ path: '', message: 'an object must be a JSON object' }];
    const problems = [];
    for (const f of ['apiVersion', 'kind']) {
        if (obj[f] === undefined)
            problems.push({ path: f, message: 'required field missing' });
    }
    if (problems.length > 0)
        return problems;
    const { Model, error } = await loadModel(obj.apiVersion, obj.kind);
    if (error)
        return [{ path: '', message: error }];
    return [...checkSchema(Model, obj, `${obj.apiVersion} ${obj.kind}`), ...checkRules(obj)];
}

/**
 * Split input text into objects: one object, a List, a JSON array, or newline-delimited
 * objects. Returns {objects, errors}; errors are strings.
 */
export function parseObjectsText(text, source = 'stdin') {
    return parseObjects(text, source,
        (doc) => typeof doc.kind === 'string' && doc.kind.endsWith('List'));
}

async function main(argv) {
    let inputs;
    try {
        inputs = readInputs(argv);
    } catch (e) {
        process.stderr.write(`validate-objects: ${e.message}\n`);
        return 2;
    }
    const objects = [];
    const lines = [];
    for (const [source, text] of inputs) {
        const r = parseObjectsText(text, source);
        objects.push(...r.objects);
        lines.push(...r.errors);
    }
    if (objects.length === 0 && lines.length === 0) {
        process.stderr.write('validate-objects: no objects in the input\n');
        return 2;
    }
    for (const [k, obj] of objects.entries()) {
        const kind = isObj(obj) && typeof obj.kind === 'string' ? obj.kind : '-';
        for (const p of await checkObject(obj))
            lines.push(`object[${k}] ${kind} ${objectName(obj)}: ${p.path || '(object)'}: ` +
                p.message);
    }
    if (lines.length > 0) {
        process.stdout.write(lines.join('\n') + '\n');
        return 1;
    }
    process.stdout.write(`ok ${objects.length} objects\n`);
    return 0;
}

/* Run as a program (also through a symlink), not when imported by the self-test. */
if (invokedDirectly(import.meta.url))
    process.exitCode = await main(process.argv.slice(2));
