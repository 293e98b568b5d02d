"""The console's files (index.html, console.css, console.js), served by
`rtf.server.api_console`: package data, read with `importlib.resources`."""
