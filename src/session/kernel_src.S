/* The session kernels (kernels/), embedded so the daemon can hand them to a
 * cell as `python3 -c SOURCE` without installing anything the sandbox sees. */
	.section .rodata
	.global hutch_kernel_python_src
	.global hutch_kernel_bash_src
	.global hutch_kernel_node_src
hutch_kernel_python_src:
	.incbin "kernels/python.py"
	.byte 0
hutch_kernel_bash_src:
	.incbin "kernels/bash.py"
	.byte 0
hutch_kernel_node_src:
	.incbin "kernels/node.js"
	.byte 0
	.section .note.GNU-stack,"",@progbits
