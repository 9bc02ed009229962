// SPDX-License-Identifier: Apache-2.0
/*
 * schema-check.mjs - what validate-pod.mjs and validate-objects.mjs share: checking one
 * object against its kubernetes-models class, reading input, reporting.
 *
 * kubernetes-models ships its schemas as compiled (ajv standalone) validators in
 * node_modules/kubernetes-models/_schemas/*.{js,mjs}, one per definition, with each
 * `$ref` compiled to an import of the referenced definition's validator (ObjectMeta & co.
 * live in node_modules/@kubernetes-models/apimachinery/_schemas/). There is no JSON copy
 * of the schema to read, so an object is walked *with* the schema:
 *  - types and required fields: `new Model(obj).validate()` (checkTypes);
 *  - fields outside the schema: the shipped validator runs on a read-tracking Proxy of
 *    the object; it reads every property its (sub)schema defines and every key of a map
 *    (labels, resources.limits, ...), and never reads a property the schema does not
 *    define. Anything it did not read is an unknown field at its path, e.g.
 *    `spec.containers[0].evn` (checkUnknownFields).
 *
 * Paths: `a.b[0].c`, keys that are not identifiers quoted: `labels["volcano.sh/job-name"]`.
 */
import { readFileSync, realpathSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

export const isObj = (v) => v !== null && typeof v === 'object' && !Array.isArray(v);
export const arr = (v) => (Array.isArray(v) ? v : []);

/*
 * Objects the schema types as free-form (`type: object` with no properties), which the
 * validator therefore never looks into. Their contents are not unknown fields.
 */
const FREE_FORM = [/^metadata\.managedFields\[\d+\]\.fieldsV1$/];

const IDENT = /^[A-Za-z_][A-Za-z0-9_-]*$/;

/** Path of `key` inside the value at `base` (array index or object key). */
export function childPath(base, key, isArray) {
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

/* ---------- types and required fields ---------- */

/** Schema type errors of obj under Model: [{path, message, keyword}]. */
export function checkTypes(Model, obj) {
    const problems = [];
    try {
        new Model(obj).validate();
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

/* ---------- fields outside the schema ---------- */

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

/**
 * Fields of obj that Model's schema does not define: [{path, message}]. typeProblems
 * are checkTypes' results: below a value of the wrong type the validator reads nothing,
 * so nothing there is reported again. schemaName names the schema in the message.
 */
export function checkUnknownFields(Model, obj, typeProblems, schemaName) {
    const reads = new Map();
    /* The model's validate() runs the shipped validator on `this`: give it the proxy. */
    try {
        Model.prototype.validate.call(tracked(obj, '', reads));
    } catch {
        /* type errors were reported by checkTypes */
    }
    const badTypes = typeProblems.filter((p) => p.keyword === 'type').map((p) => p.path);
    const under = (path) => badTypes.some((b) => path === b || path.startsWith(b + '.') ||
        path.startsWith(b + '['));
    const problems = [];
    const message = `unknown field (not in the ${schemaName} schema)`;
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
                problems.push({ path: p, message });
        }
    };
    walk(obj, '');
    return problems;
}

/** Both schema checks of obj under Model: [{path, message}] (empty when it conforms). */
export function checkSchema(Model, obj, schemaName) {
    const types = checkTypes(Model, obj);
    const unknown = checkUnknownFields(Model, obj, types, schemaName);
    return [...types, ...unknown].map(({ path, message }) => ({ path, message }));
}

/* ---------- input ---------- */

/*
 * Split input text into objects: one object, a List (`items`; isList decides which
 * objects count as lists), a JSON array, or newline-delimited objects (one JSON value a
 * line). Returns {objects, errors}; errors are strings "SOURCE:LINE: not JSON: ...".
 */
export function parseObjects(text, source, isList) {
    const unwrap = (doc) => {
        if (Array.isArray(doc))
            return doc;
        if (isObj(doc) && Array.isArray(doc.items) && isList(doc))
            return doc.items;
        return [doc];
    };
    const trimmed = text.trim();
    if (trimmed === '')
        return { objects: [], errors: [] };
    let doc;
    try {
        doc = JSON.parse(trimmed);
    } catch {
        /* not one document: newline-delimited */
        const objects = [];
        const errors = [];
        trimmed.split('\n').forEach((line, i) => {
            if (line.trim() === '')
                return;
            try {
                objects.push(...unwrap(JSON.parse(line)));
            } catch (e) {
                errors.push(`${source}:${i + 1}: not JSON: ${e.message}`);
            }
        });
        return { objects, errors };
    }
    return { objects: unwrap(doc), errors: [] };
}

/** [[source, text]] of the files named in argv, or of stdin when there are none. Throws. */
export function readInputs(argv) {
    if (argv.length === 0)
        return [['stdin', readFileSync(0, 'utf8')]];
    return argv.map((f) => [f, readFileSync(f, 'utf8')]);
}

/** "NS/NAME" of an object ("-" for what is missing; generateName gets a "*"). */
export function objectName(obj) {
    const md = isObj(obj) && isObj(obj.metadata) ? obj.metadata : {};
    const ns = typeof md.namespace === 'string' ? md.namespace : '-';
    const name = typeof md.name === 'string' ? md.name :
        (typeof md.generateName === 'string' ? `${md.generateName}*` : '-');
    return `${ns}/${name}`;
}

/**
 * Whether the module at moduleUrl (its import.meta.url) is the program node was started
 * with (also through a symlink), not a module imported by a test.
 */
export function invokedDirectly(moduleUrl) {
    try {
        return realpathSync(process.argv[1]) === realpathSync(fileURLToPath(moduleUrl));
    } catch {
        return false;
    }
}
