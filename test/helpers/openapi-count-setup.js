module.exports = require("./openapi-count").setup;
