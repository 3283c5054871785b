module.exports = require("./openapi-count").teardown;
