// Package httpapi serves a sessiondb.Store over HTTP: a JSON API under
// /api/v1, live changes as Server-Sent Events at /api/v1/events, an OpenAPI
// document at /api/v1/openapi.json, and (when given) the embedded web page.
//
// Handlers see only the sessiondb.Store contract and the small optional
// interfaces this package declares (UsageReporter, ChangeFeed); a store
// that lacks one answers the routes that need it with 501.
//
// The server is safe by default: it checks the Host header (DNS
// rebinding), asks for a bearer token or a login cookie when given one,
// refuses cross-origin mutations and those without the X-Sessiondb header
// (CSRF), sets a Content-Security-Policy without inline script, and bounds
// request bodies, query strings, request time and event streams. See
// DESIGN.md.
package httpapi
