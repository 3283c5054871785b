process.env.TEST_BACKEND = "sqlite";
