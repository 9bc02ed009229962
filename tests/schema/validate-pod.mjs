#!/usr/bin/env node
// SPDX-License-Identifier: Apache-2.0
/*
 * validate-pod.mjs - check Pods (as a mutating webhook left them) against the real
 * Kubernetes Pod schema and the pod validation rules a webhook can break.
 *
 * usage: node tests/schema/validate-pod.mjs [FILE...]     (no FILE: read stdin)
 *
 * Input: a single Pod, a JSON List of Pods ({"kind": "...List", "items": [...]}),
 * a JSON array of Pods, or newline-delimited Pods (one JSON object a line).
 *
 * For every pod:
 *  (a) types and required fields: kubernetes-models' Pod class, `new Pod(obj).validate()`;
 *  (b) no field outside the schema: the shipped Pod validator runs on a read-tracking
 *      Proxy of the pod, and whatever it did not read is reported as an unknown field at
 *      its path (e.g. `spec.containers[0].evn`); how and why: schema-check.mjs, which
 *      holds (a) and (b), shared with validate-objects.mjs;
 *  (c) API-server validation rules that the OpenAPI schema cannot express (port names
 *      IANA_SVC_NAME and unique per container, containerPort 1..65535, volume names
 *      unique DNS-1123 labels, mountPath unique per container, every volumeMount names a
 *      volume, hostname/subdomain DNS-1123 labels, container names unique across
 *      containers and init containers). Duplicate env names are legal: not checked.
 *
 * Output: one line per problem, `pod[K] NS/NAME: PATH: message`, exit 1; otherwise
 * `ok N pods`, exit 0. Exit 2 for unreadable input or a missing node_modules.
 *
 * Also importable: checkPod(obj) -> [{path, message}], parsePods(text) -> {pods, errors},
 * checkPodSpec(spec, basePath) -> [{path, message}] (the rules of (c) for one PodSpec).
 */
import {
    arr, checkSchema, invokedDirectly, isObj, objectName, parseObjects, readInputs,
} from './schema-check.mjs';

let Pod;
try {
    ({ Pod } = await import('kubernetes-models/v1/Pod'));
} catch (e) {
    process.stderr.write(`validate-pod: cannot load kubernetes-models (${e.message}); ` +
        'run: npm ci --prefix tests/schema\n');
    process.exit(2);
}

/* ---------- (c) validation rules the schema cannot express ---------- */

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/;

function dnsLabelError(v) {
    if (typeof v !== 'string')
        return null; /* type problems are (a)'s */
    if (v.length > 63)
        return `must be no more than 63 characters (DNS-1123 label), is ${v.length}`;
    if (!DNS1123_LABEL.test(v))
        return `${JSON.stringify(v)} is not a DNS-1123 label ` +
            "(lower case alphanumerics and '-', starting and ending with an alphanumeric)";
    return null;
}

/* k8s.io/apimachinery validation.IsValidPortName */
function portNameError(v) {
    if (v.length > 15)
        return `port name ${JSON.stringify(v)} must be no more than 15 characters`;
    if (!/^[-a-z0-9]+$/.test(v))
        return `port name ${JSON.stringify(v)} must contain only lower case alphanumerics and '-'`;
    if (!/[a-z]/.test(v))
        return `port name ${JSON.stringify(v)} must contain at least one letter`;
    if (v.includes('--'))
        return `port name ${JSON.stringify(v)} must not contain consecutive hyphens`;
    if (v.startsWith('-') || v.endsWith('-'))
        return `port name ${JSON.stringify(v)} must not begin or end with a hyphen`;
    return null;
}

function checkRules(obj) {
    const problems = [];
    const add = (path, message) => problems.push({ path, message });
    if (!isObj(obj)) {
        add('', 'a Pod must be a JSON object');
        return problems;
    }
    if (obj.kind === undefined)
        add('kind', 'required field missing');
    if (obj.apiVersion === undefined)
        add('apiVersion', 'required field missing');
    if (isObj(obj.spec))
        problems.push(...checkPodSpec(obj.spec, 'spec'));
    else if (obj.spec === undefined)
        add('spec', 'required field missing');
    return problems;
}

/**
 * The rules of (c) for one PodSpec at path `specPath` ('spec' in a Pod,
 * 'spec.template.spec' in a Deployment): [{path, message}].
 */
export function checkPodSpec(spec, specPath) {
    const problems = [];
    const add = (path, message) => problems.push({ path, message });
    if (!isObj(spec))
        return problems;

    for (const f of ['hostname', 'subdomain']) {
        if (spec[f] !== undefined && spec[f] !== '') {
            const e = dnsLabelError(spec[f]);
            if (e)
                add(`${specPath}.${f}`, e);
        }
    }

    /* volumes: unique DNS-1123 names */
    const volumes = new Map();
    arr(spec.volumes).forEach((v, i) => {
        if (!isObj(v) || typeof v.name !== 'string')
            return;
        const path = `${specPath}.volumes[${i}].name`;
        const e = dnsLabelError(v.name);
        if (e)
            add(path, `volume name: ${e}`);
        if (volumes.has(v.name))
            add(path, `duplicate volume name ${JSON.stringify(v.name)} ` +
                `(also ${specPath}.volumes[${volumes.get(v.name)}])`);
        else
            volumes.set(v.name, i);
    });

    /* containers and init containers */
    const names = new Map();
    for (const list of ['containers', 'initContainers']) {
        arr(spec[list]).forEach((c, ci) => {
            if (!isObj(c))
                return;
            const base = `${specPath}.${list}[${ci}]`;
            if (typeof c.name === 'string') {
                if (names.has(c.name))
                    add(`${base}.name`, `duplicate container name ${JSON.stringify(c.name)} ` +
                        `(also ${names.get(c.name)})`);
                else
                    names.set(c.name, base);
            }

            const portNames = new Map();
            arr(c.ports).forEach((p, pi) => {
                if (!isObj(p))
                    return;
                const pbase = `${base}.ports[${pi}]`;
                if (typeof p.name === 'string' && p.name !== '') {
                    const e = portNameError(p.name);
                    if (e)
                        add(`${pbase}.name`, e);
                    if (portNames.has(p.name))
                        add(`${pbase}.name`, `duplicate port name ${JSON.stringify(p.name)} ` +
                            `in container (also ${base}.ports[${portNames.get(p.name)}])`);
                    else
                        portNames.set(p.name, pi);
                }
                if (Number.isInteger(p.containerPort) &&
                    (p.containerPort < 1 || p.containerPort > 65535))
                    add(`${pbase}.containerPort`,
                        `must be between 1 and 65535, inclusive (is ${p.containerPort})`);
                if (Number.isInteger(p.hostPort) && p.hostPort !== 0 &&
                    (p.hostPort < 1 || p.hostPort > 65535))
                    add(`${pbase}.hostPort`,
                        `must be between 1 and 65535, inclusive (is ${p.hostPort})`);
            });

            const mountPaths = new Map();
            arr(c.volumeMounts).forEach((m, mi) => {
                if (!isObj(m))
                    return;
                const mbase = `${base}.volumeMounts[${mi}]`;
                if (typeof m.name === 'string' && !volumes.has(m.name))
                    add(`${mbase}.name`,
                        `volume ${JSON.stringify(m.name)} not found in ${specPath}.volumes`);
                if (typeof m.mountPath === 'string') {
                    if (mountPaths.has(m.mountPath))
                        add(`${mbase}.mountPath`, `duplicate mountPath ${JSON.stringify(m.mountPath)} ` +
                            `(also ${base}.volumeMounts[${mountPaths.get(m.mountPath)}])`);
                    else
                        mountPaths.set(m.mountPath, mi);
                }
            });
        });
    }
    return problems;
}

/** Every problem of one pod: [{path, message}] (empty when the pod is fine). */
export function checkPod(obj) {
    if (!isObj(obj))
        return [{ path: '', message: 'a Pod must be a JSON object' }];
    return [...checkSchema(Pod, obj, 'Pod'), ...checkRules(obj)];
}

/**
 * Split input text into pods. Accepts one Pod, a List (`items`), a JSON array, or
 * newline-delimited objects. Returns {pods, errors}; errors are strings.
 */
export function parsePods(text, source = 'stdin') {
    const { objects, errors } = parseObjects(text, source, (doc) => doc.kind !== 'Pod');
    return { pods: objects, errors };
}

function main(argv) {
    let inputs;
    try {
        inputs = readInputs(argv);
    } catch (e) {
        process.stderr.write(`validate-pod: ${e.message}\n`);
        return 2;
    }
    const pods = [];
    const lines = [];
    for (const [source, text] of inputs) {
        const r = parsePods(text, source);
        pods.push(...r.pods);
        lines.push(...r.errors);
    }
    if (pods.length === 0 && lines.length === 0) {
        process.stderr.write('validate-pod: no pods in the input\n');
        return 2;
    }
    pods.forEach((pod, k) => {
        for (const p of checkPod(pod))
            lines.push(`pod[${k}] ${objectName(pod)}: ${p.path || '(pod)'}: ${p.message}`);
    });
    if (lines.length > 0) {
        process.stdout.write(lines.join('\n') + '\n');
        return 1;
    }
    process.stdout.write(`ok ${pods.length} pods\n`);
    return 0;
}

/* Run as a program (also through a symlink), not when imported by the self-test. */
if (invokedDirectly(import.meta.url))
    process.exitCode = main(process.argv.slice(2));
