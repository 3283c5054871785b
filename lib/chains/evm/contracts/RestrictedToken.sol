// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

import "./TestToken.sol";

/// TestToken with a blacklist, as USDC and USDT have: a blacklisted address can neither send nor
/// receive, so a sweep batch holding one of its deposits reverts whole.
contract RestrictedToken is TestToken {
	mapping(address => bool) public blacklisted;

	constructor(string memory name_, string memory symbol_) TestToken(name_, symbol_) {}

	function setBlacklisted(address account, bool value) external {
		blacklisted[account] = value;
	}

	function _transfer(address from, address to, uint256 amount) internal override {
		require(!blacklisted[from] && !blacklisted[to], "blacklisted");
		super._transfer(from, to, amount);
	}
}
