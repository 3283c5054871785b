import "./global-agent-off";

process.env.TEST_BACKEND = "mysql";
