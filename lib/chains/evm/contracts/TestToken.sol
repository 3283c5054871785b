// SPDX-License-Identifier: MIT
pragma solidity ^0.8.20;

/// A minimal ERC-20 for local chains and tests (6 decimals, like USDC). Anyone may mint:
/// it exists only on development chains.
contract TestToken {
	string public name;
	string public symbol;
	uint8 public constant decimals = 6;
	uint256 public totalSupply;
	mapping(address => uint256) public balanceOf;
	mapping(address => mapping(address => uint256)) public allowance;

	event Transfer(address indexed from, address indexed to, uint256 value);
	event Approval(address indexed owner, address indexed spender, uint256 value);

	constructor(string memory name_, string memory symbol_) {
		name = name_;
		symbol = symbol_;
	}

	function mint(address to, uint256 amount) external {
		totalSupply += amount;
		balanceOf[to] += amount;
		emit Transfer(address(0), to, amount);
	}

	function transfer(address to, uint256 amount) external returns (bool) {
		_transfer(msg.sender, to, amount);
		return true;
	}

	function approve(address spender, uint256 amount) external returns (bool) {
		allowance[msg.sender][spender] = amount;
		emit Approval(msg.sender, spender, amount);
		return true;
	}

	function transferFrom(address from, address to, uint256 amount) external returns (bool) {
		uint256 allowed = allowance[from][msg.sender];
		require(allowed >= amount, "allowance");
		if (allowed != type(uint256).max) allowance[from][msg.sender] = allowed - amount;
		_transfer(from, to, amount);
		return true;
	}

	/// One Transfer event per entry: several transfers (to the same or different addresses) in one transaction.
	function batchTransfer(address[] calldata to, uint256[] calldata amounts) external {
		require(to.length == amounts.length, "length");
		for (uint256 i = 0; i < to.length; i++) _transfer(msg.sender, to[i], amounts[i]);
	}

	function _transfer(address from, address to, uint256 amount) internal virtual {
		require(balanceOf[from] >= amount, "balance");
		balanceOf[from] -= amount;
		balanceOf[to] += amount;
		emit Transfer(from, to, amount);
	}
}
