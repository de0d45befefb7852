#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "api/mcp_internal.h"
#include "util/err.h"

/*
 * One table per tool describes its inputs; both the JSON Schema a client
 * sees in tools/list and the checks tools/call makes come from it, so they
 * cannot drift apart. The checks are the schema's own (type, required,
 * additionalProperties false, enum, minimum 0); values hutch itself
 * bounds (limits, languages of run_code) are checked again by the request
 * parser, which names the field too.
 */

static const char *const type_names[] = {
	[MCP_STRING] = "string",   [MCP_INTEGER] = "integer", [MCP_NUMBER] = "number",
	[MCP_BOOLEAN] = "boolean", [MCP_OBJECT] = "object",   [MCP_MAP] = "object",
	[MCP_STRINGS] = "array",
};

static json_t *field_schema(const struct mcp_field *f)
{
	json_t *s = json_pack("{s:s}", "type", type_names[f->type]);

	if (f->description)
		json_object_set_new(s, "description", json_string(f->description));
	if (f->type == MCP_INTEGER)
		json_object_set_new(s, "minimum", json_integer(0));
	if (f->type == MCP_OBJECT && f->members) {
		json_t *sub = hutch_mcp_schema(f->members);
		json_object_update(s, sub);
		json_decref(sub);
	}
	if (f->type == MCP_MAP)
		json_object_set_new(s, "additionalProperties",
				    json_pack("{s:s}", "type", "string"));
	if (f->type == MCP_STRINGS)
		json_object_set_new(s, "items", json_pack("{s:s}", "type", "string"));
	if (f->choices) {
		json_t *e = json_array();
		for (size_t i = 0; f->choices[i]; i++)
			json_array_append_new(e, json_string(f->choices[i]));
		json_object_set_new(s, "enum", e);
	}
	return s;
}

json_t *hutch_mcp_schema(const struct mcp_field *fields)
{
	json_t *props = json_object();
	json_t *required = json_array();
	json_t *s;

	for (const struct mcp_field *f = fields; f->name; f++) {
		json_object_set_new(props, f->name, field_schema(f));
		if (f->is_required)
			json_array_append_new(required, json_string(f->name));
	}
	s = json_pack("{s:s,s:o,s:b}", "type", "object", "properties", props,
		      "additionalProperties", 0);
	if (json_array_size(required))
		json_object_set_new(s, "required", required);
	else
		json_decref(required);
	return s;
}

static bool has_type(const struct mcp_field *f, json_t *v)
{
	switch (f->type) {
	case MCP_STRING:
		return json_is_string(v);
	case MCP_INTEGER:
		return json_is_integer(v) && json_integer_value(v) >= 0;
	case MCP_NUMBER:
		return json_is_number(v);
	case MCP_BOOLEAN:
		return json_is_boolean(v);
	case MCP_OBJECT:
	case MCP_MAP:
		return json_is_object(v);
	case MCP_STRINGS:
		return json_is_array(v);
	}
	return false;
}

static const char *type_phrase(const struct mcp_field *f)
{
	switch (f->type) {
	case MCP_STRING:
		return "a string";
	case MCP_INTEGER:
		return "an integer >= 0";
	case MCP_NUMBER:
		return "a number";
	case MCP_BOOLEAN:
		return "true or false";
	case MCP_OBJECT:
		return "an object";
	case MCP_MAP:
		return "an object of strings";
	case MCP_STRINGS:
		return "an array of strings";
	}
	return "?";
}

/* The members of a map or an array must all be strings. */
static int check_strings(const char *name, json_t *v, struct hutch_err *err)
{
	const char *key;
	json_t *item;
	size_t i;

	if (json_is_array(v)) {
		json_array_foreach(v, i, item)
		{
			if (!json_is_string(item))
				return hutch_err_setx(err, EINVAL,
						      "field '%s[%zu]' must be a string", name, i);
		}
		return 0;
	}
	json_object_foreach(v, key, item)
	{
		if (!json_is_string(item))
			return hutch_err_setx(err, EINVAL, "field '%s.%s' must be a string", name,
					      key);
	}
	return 0;
}

static int check_value(const struct mcp_field *f, const char *name, json_t *v,
		       struct hutch_err *err)
{
	if (!has_type(f, v))
		return hutch_err_setx(err, EINVAL, "field '%s' must be %s", name, type_phrase(f));
	if (f->choices) {
		bool found = false;
		for (size_t i = 0; f->choices[i] && !found; i++)
			found = strcmp(json_string_value(v), f->choices[i]) == 0;
		if (!found)
			return hutch_err_setx(err, EINVAL,
					      "field '%s': '%s' is not one of the allowed values",
					      name, json_string_value(v));
	}
	if (f->type == MCP_MAP || f->type == MCP_STRINGS)
		return check_strings(name, v, err);
	if (f->type == MCP_OBJECT && f->members)
		return hutch_mcp_check(f->members, v, name, err);
	return 0;
}

static const struct mcp_field *find_field(const struct mcp_field *fields, const char *name)
{
	for (const struct mcp_field *f = fields; f->name; f++)
		if (strcmp(f->name, name) == 0)
			return f;
	return NULL;
}

int hutch_mcp_check(const struct mcp_field *fields, json_t *args, const char *prefix,
		    struct hutch_err *err)
{
	const char *key;
	json_t *v;
	char name[200];

	json_object_foreach(args, key, v)
	{
		const struct mcp_field *f = find_field(fields, key);
		snprintf(name, sizeof(name), "%s%s%s", prefix ? prefix : "", prefix ? "." : "",
			 key);
		if (!f)
			return hutch_err_setx(err, EINVAL, "unknown field '%s'", name);
		if (check_value(f, name, v, err) < 0)
			return -1;
	}
	for (const struct mcp_field *f = fields; f->name; f++)
		if (f->is_required && !json_object_get(args, f->name))
			return hutch_err_setx(err, EINVAL, "field '%s%s%s' is required",
					      prefix ? prefix : "", prefix ? "." : "", f->name);
	return 0;
}
