#!/usr/bin/env node
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
 *  (b) no field outside the schema: kubernetes-models ships its schemas as compiled
 *      (ajv standalone) validators in node_modules/kubernetes-models/_schemas/*.{js,mjs},
 *      one per definition, with each `$ref` compiled to an import of the referenced
 *      definition's validator (ObjectMeta & co. live in
 *      node_modules/@kubernetes-models/apimachinery/_schemas/). There is no JSON copy of
 *      the schema to read, so the object is walked *with* the schema: the shipped Pod
 *      validator runs on a read-tracking Proxy of the pod; it reads every property its
 *      (sub)schema defines and every key of a map (labels, resources.limits, ...), and
 *      never reads a property the schema does not define. Anything it did not read is
 *      reported as an unknown field at its path (e.g. `spec.containers[0].evn`);
 *  (c) API-server validation rules that the OpenAPI schema cannot express (port names
 *      IANA_SVC_NAME and unique per container, containerPort 1..65535, volume names
 *      unique DNS-1123 labels, mountPath unique per container, every volumeMount names a
 *      volume, hostname/subdomain DNS-1123 labels, container names unique across
 *      containers and init containers). Duplicate env names are legal: not checked.
 *
 * Output: one line per problem, `pod[K] NS/NAME: PATH: message`, exit 1; otherwise
 * `ok N pods`, exit 0. Exit 2 for unreadable input or a missing node_modules.
 *
 * Also importable: checkPod(obj) -> [{path, message}], parsePods(text) -> {pods, errors}.
 */
import { readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

let Pod;
try {
    ({ Pod } = await import('kubernetes-models/v1/Pod'));
} catch (e) {
    process.stderr.write(`validate-pod: cannot load kubernetes-models (${e.message}); ` +
        'run: npm ci --prefix tests/schema\n');
    process.exit(2);
}

/*
 * Objects the schema types as free-form (`type: object` with no properties), which the
 * validator therefore never looks into. Their contents are not unknown fields.
 */
const FREE_FORM = [/^metadata\.managedFields\[\d+\]\.fieldsV1$/];

const IDENT = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** Path of `key` inside the value at `base` (array index or object key). */
function childPath(base, key, isArray) {
    if (isArray)
        return `${base}[${key}]`;
    if (!IDENT.test(key))
        return `${base}[${JSON.stringify(key)}]`; /* e.g. annotations["volcano.sh/job-name"] */
    return base === '' ? key : `${base}.${key}`;
}

/** Turn an ajv instancePath (JSON pointer) into our path syntax, guided by the data. */
function pointerToPath(pointer, data) {
    if (!pointer)
        return '';
    let path = '';
    let cur = data;
    for (const raw of pointer.split('/').slice(1)) {
        const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
        const isArray = Array.isArray(cur);
        path = childPath(path, key, isArray);
        cur = cur !== null && typeof cur === 'object' ? cur[key] : undefined;
    }
    return path;
}

/* ---------- (a) types and required fields ---------- */

function checkTypes(obj) {
    const problems = [];
    try {
        new Pod(obj).validate();
    } catch (e) {
        if (!Array.isArray(e.errors))
            throw e;
        for (const err of e.errors) {
            let path = pointerToPath(err.instancePath, obj);
            let message = err.message || err.keyword;
            if (err.keyword === 'required' && err.params && err.params.missingProperty) {
                path = childPath(path, err.params.missingProperty, false);
                message = 'required field missing';
            } else if (err.keyword === 'enum' && err.params && err.params.allowedValues) {
                message = `must be one of ${JSON.stringify(err.params.allowedValues)}`;
            }
            problems.push({ path, message, keyword: err.keyword });
        }
    }
    return problems;
}

/* ---------- (b) fields outside the schema ---------- */

/*
 * Wrap `value` so that every own property the validator reads is recorded in
 * reads.get(path). Properties of objects are reached only through `get`, so a
 * property that is never read is one the schema does not define.
 */
function tracked(value, path, reads) {
    if (value === null || typeof value !== 'object')
        return value;
    if (!reads.has(path))
        reads.set(path, new Set());
    const seen = reads.get(path);
    const isArray = Array.isArray(value);
    return new Proxy(value, {
        get(target, key, receiver) {
            const v = Reflect.get(target, key, receiver);
            if (typeof key !== 'string' || !Object.prototype.hasOwnProperty.call(target, key))
                return v;
            seen.add(key);
            return tracked(v, childPath(path, key, isArray), reads);
        },
    });
}

function checkUnknownFields(obj, typeProblems) {
    const reads = new Map();
    /* The Pod class's validate() runs the shipped validator on `this`: give it the proxy. */
    try {
        Pod.prototype.validate.call(tracked(obj, '', reads));
    } catch {
        /* type errors were reported by checkTypes */
    }
    /* Below a value of the wrong type the validator reads nothing: don't pile on. */
    const badTypes = typeProblems.filter((p) => p.keyword === 'type').map((p) => p.path);
    const under = (path) => badTypes.some((b) => path === b || path.startsWith(b + '.') ||
        path.startsWith(b + '['));
    const problems = [];
    const walk = (value, path) => {
        if (value === null || typeof value !== 'object' || under(path))
            return;
        if (FREE_FORM.some((re) => re.test(path)))
            return;
        const seen = reads.get(path) || new Set();
        const isArray = Array.isArray(value);
        for (const key of Object.keys(value)) {
            const p = childPath(path, key, isArray);
            if (seen.has(key))
                walk(value[key], p);
            else
                problems.push({ path: p, message: 'unknown field (not in the Pod schema)' });
        }
    };
    walk(obj, '');
    return problems;
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

const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
const arr = (v) => (Array.isArray(v) ? v : []);

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
    const spec = isObj(obj.spec) ? obj.spec : null;
    if (!spec) {
        if (obj.spec === undefined)
            add('spec', 'required field missing');
        return problems;
    }

    for (const f of ['hostname', 'subdomain']) {
        if (spec[f] !== undefined && spec[f] !== '') {
            const e = dnsLabelError(spec[f]);
            if (e)
                add(`spec.${f}`, e);
        }
    }

    /* volumes: unique DNS-1123 names */
    const volumes = new Map();
    arr(spec.volumes).forEach((v, i) => {
        if (!isObj(v) || typeof v.name !== 'string')
            return;
        const path = `spec.volumes[${i}].name`;
        const e = dnsLabelError(v.name);
        if (e)
            add(path, `volume name: ${e}`);
        if (volumes.has(v.name))
            add(path, `duplicate volume name ${JSON.stringify(v.name)} ` +
                `(also spec.volumes[${volumes.get(v.name)}])`);
        else
            volumes.set(v.name, i);
    });

    /* containers and init containers */
    const names = new Map();
    for (const list of ['containers', 'initContainers']) {
        arr(spec[list]).forEach((c, ci) => {
            if (!isObj(c))
                return;
            const base = `spec.${list}[${ci}]`;
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
                    add(`${mbase}.name`, `volume ${JSON.stringify(m.name)} not found in spec.volumes`);
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
    const types = checkTypes(obj);
    const unknown = checkUnknownFields(obj, types);
    const rules = checkRules(obj);
    return [...types, ...unknown, ...rules].map(({ path, message }) => ({ path, message }));
}

/**
 * Split input text into pods. Accepts one Pod, a List (`items`), a JSON array, or
 * newline-delimited objects. Returns {pods, errors}; errors are strings.
 */
export function parsePods(text, source = 'stdin') {
    const trimmed = text.trim();
    if (trimmed === '')
        return { pods: [], errors: [] };
    let doc;
    try {
        doc = JSON.parse(trimmed);
    } catch {
        /* not one document: newline-delimited */
        const pods = [];
        const errors = [];
        trimmed.split('\n').forEach((line, i) => {
            if (line.trim() === '')
                return;
            try {
                pods.push(...unwrap(JSON.parse(line)));
            } catch (e) {
                errors.push(`${source}:${i + 1}: not JSON: ${e.message}`);
            }
        });
        return { pods, errors };
    }
    return { pods: unwrap(doc), errors: [] };
}

function unwrap(doc) {
    if (Array.isArray(doc))
        return doc;
    if (isObj(doc) && Array.isArray(doc.items) && doc.kind !== 'Pod')
        return doc.items;
    return [doc];
}

function label(pod, k) {
    const md = isObj(pod) && isObj(pod.metadata) ? pod.metadata : {};
    const ns = typeof md.namespace === 'string' ? md.namespace : '-';
    const name = typeof md.name === 'string' ? md.name :
        (typeof md.generateName === 'string' ? `${md.generateName}*` : '-');
    return `pod[${k}] ${ns}/${name}`;
}

function main(argv) {
    const inputs = [];
    try {
        if (argv.length === 0)
            inputs.push(['stdin', readFileSync(0, 'utf8')]);
        for (const f of argv)
            inputs.push([f, readFileSync(f, 'utf8')]);
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
            lines.push(`${label(pod, k)}: ${p.path || '(pod)'}: ${p.message}`);
    });
    if (lines.length > 0) {
        process.stdout.write(lines.join('\n') + '\n');
        return 1;
    }
    process.stdout.write(`ok ${pods.length} pods\n`);
    return 0;
}

/* Run as a program (also through a symlink), not when imported by the self-test. */
function invokedDirectly() {
    try {
        return realpathSync(process.argv[1]) === realpathSync(fileURLToPath(import.meta.url));
    } catch {
        return false;
    }
}

if (invokedDirectly())
    process.exitCode = main(process.argv.slice(2));
