"""The toolkit for server-rendered pages, shared by `web` (sign-in, onboarding, settings, public
invoice pages) and `authz` (the consent page): browser sessions, CSRF protection, Jinja rendering
with the shared layout (`templates/base.html`, `error.html`, `_forms.html`) and page routing with
sign-in and CSRF checks. It knows no page of its own beyond the error page."""
