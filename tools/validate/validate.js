// SPDX-License-Identifier: (LGPL-2.1 OR BSD-2-Clause)
// Validates the shipped deploy manifests and Grafana dashboard against JSON Schemas
// generated from the projects' own published types: kubernetes-types (the
// Kubernetes API, from its OpenAPI spec) and @grafana/schema (Grafana's dashboard
// model, generated from its CUE kinds). Unknown fields are errors (the generated
// schemas forbid additional properties), as `kubectl apply --validate=strict` would.
// usage: node validate.js DASHBOARD.json MANIFEST.yaml...   (exit 1 on any error)
'use strict';
const fs = require('fs');
const path = require('path');
const Ajv = require('ajv');
const YAML = require('yaml');
const tsj = require('ts-json-schema-generator');

const mods = path.join(__dirname, 'node_modules');
const kinds = {
	'apps/v1 DaemonSet': ['kubernetes-types/apps/v1.d.ts', 'DaemonSet'],
	'v1 Namespace': ['kubernetes-types/core/v1.d.ts', 'Namespace'],
	'v1 Service': ['kubernetes-types/core/v1.d.ts', 'Service'],
	'v1 ServiceAccount': ['kubernetes-types/core/v1.d.ts', 'ServiceAccount'],
	'kustomize.config.k8s.io/v1beta1 Kustomization': null,
};

function schemaOf(file, type) {
	return tsj.createGenerator({ path: path.join(mods, file), type, skipTypeCheck: true,
				     expose: 'all', topRef: true }).createSchema(type);
}

const ajv = new Ajv({ allErrors: true, strict: false });
let failed = 0;

function check(what, schema, doc) {
	const ok = ajv.validate(schema, doc);
	if (!ok) {
		failed++;
		for (const e of ajv.errors.slice(0, 10))
			console.log(`FAIL ${what}: ${e.instancePath || '/'} ${e.message} ` +
				    JSON.stringify(e.params));
	} else {
		console.log(`ok ${what}`);
	}
}

function checkKustomization(file, doc) {
	const dir = path.dirname(file);
	const allowed = ['apiVersion', 'kind', 'namespace', 'labels', 'resources', 'images'];
	for (const k of Object.keys(doc))
		if (!allowed.includes(k)) {
			failed++;
			console.log(`FAIL ${file}: unexpected field ${k}`);
		}
	for (const r of doc.resources || [])
		if (!fs.existsSync(path.join(dir, r))) {
			failed++;
			console.log(`FAIL ${file}: resource ${r} does not exist`);
		}
	console.log(`ok ${file} (kustomization: ${(doc.resources || []).length} resources)`);
}

const [dashboard, ...manifests] = process.argv.slice(2);
check(dashboard, schemaOf('@grafana/schema/dist/types/raw/dashboard/x/types.gen.d.ts',
			  'Dashboard'), JSON.parse(fs.readFileSync(dashboard, 'utf8')));
const cache = {};
for (const file of manifests) {
	for (const d of YAML.parseAllDocuments(fs.readFileSync(file, 'utf8'))) {
		if (d.errors.length) {
			failed++;
			console.log(`FAIL ${file}: ${d.errors[0].message}`);
			continue;
		}
		const doc = d.toJS();
		const key = `${doc.apiVersion} ${doc.kind}`;
		if (!(key in kinds)) {
			failed++;
			console.log(`FAIL ${file}: no schema for ${key}`);
		} else if (kinds[key] === null) {
			checkKustomization(file, doc);
		} else {
			cache[key] = cache[key] || schemaOf(...kinds[key]);
			check(`${file} (${key})`, cache[key], doc);
		}
	}
}
process.exit(failed ? 1 : 0);
