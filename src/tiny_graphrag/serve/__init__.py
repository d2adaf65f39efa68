"""`tiny-graphrag serve`: a web page and a JSON API over indexes (needs tiny-graphrag[serve]).

`cli` (arguments, start), `indexes` (the opened indexes and their read-only look-ups), `app` (routes, streaming),
`queue` (the fair line for the model), `guard` (token, Host, body size); the page is `page.html`, `page.js` and
`page.css`, served from the package."""
