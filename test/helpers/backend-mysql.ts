process.env.TEST_BACKEND = "mysql";
