// Swagger UI over the service's own OpenAPI description; every file comes from the installed packages
// (the Content-Security-Policy allows same-origin scripts only, hence this file rather than an inline script).
window.ui = SwaggerUIBundle({
  url: "/api/v1/openapi.json",
  dom_id: "#swagger-ui",
  deepLinking: true,
  validatorUrl: null, // no call to the public validator
  presets: [SwaggerUIBundle.presets.apis, SwaggerUIBundle.SwaggerUIStandalonePreset],
  layout: "BaseLayout",
  persistAuthorization: false,
});
